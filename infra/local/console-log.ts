import type { Log } from '../../lib/log.ts';

const levels = ['debug', 'info', 'warn', 'error'] as const;
type Level = (typeof levels)[number];

/** One readable line per event for `npm start`; Lambda uses Powertools' JSON logger instead. */
export function consoleLog(minimum: Level = 'info'): Log {
  const threshold = levels.indexOf(minimum);
  const write = (level: Level) => (message: string, extra?: Record<string, unknown>) => {
    if (levels.indexOf(level) < threshold) return;
    const fields = extra === undefined || Object.keys(extra).length === 0 ? '' : ` ${JSON.stringify(extra)}`;
    process.stderr.write(`${new Date().toISOString()} ${level.padEnd(5)} ${message}${fields}\n`);
  };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}
