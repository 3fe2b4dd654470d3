import { errors } from '../errors.ts';

/** A list's label filter, as REST's `?label=` and the MCP list tool take it: `team=a,tier=gold` -> { team: 'a', tier: 'gold' }. */
export function parseLabelFilter(filter: string | undefined): Record<string, string> | undefined {
  if (filter === undefined) return undefined;
  const labels: Record<string, string> = {};
  for (const pair of filter.split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw errors.invalidRequest(`label filter ${pair} is not key=value`, { field: 'label' });
    labels[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return labels;
}
