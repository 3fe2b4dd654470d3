import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApiText } from './openapi-document.ts';

/** npm run openapi: writes docs/openapi.json from the route table (a test fails while it is stale). */
const target = join(import.meta.dirname, '..', 'docs', 'openapi.json');
writeFileSync(target, openApiText());
process.stdout.write(`wrote ${target}\n`);
