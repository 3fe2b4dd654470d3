/**
 * Quotes an argument list into one POSIX shell command: providers that run a single command string
 * (OpenSandbox's execd, Daytona's toolbox, Freestyle's exec-await) get `args` without reinterpretation.
 */
export function shellQuote(args: readonly string[]): string {
  return args
    .map((arg) => (/^[A-Za-z0-9_./=:@%+-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`))
    .join(' ');
}
