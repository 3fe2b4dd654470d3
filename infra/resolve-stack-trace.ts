import { readFileSync } from 'node:fs';
import { resolveBundleStackTrace } from './bundle-stack-trace.ts';

/**
 * npm run stack-trace -- <bundle folder> < stack.txt: a deployed function's logged stack, its places mapped
 * back to the sources through the bundle's source maps (infra/bundle-stack-trace.ts). The folder is the
 * function's code as deployed (`aws lambda get-function --query Code.Location`, unzipped) or its asset in
 * cdk.out.
 */
const [bundleDir] = process.argv.slice(2);
if (bundleDir === undefined) {
  process.stderr.write('usage: npm run stack-trace -- <bundle folder> < stack.txt\n');
  process.exit(2);
}
process.stdout.write(resolveBundleStackTrace(readFileSync(0, 'utf8'), bundleDir));
