/** Where the web console is served: the page and its bundled assets (docs/console.md). */
export const consolePrefix = '/console';

/**
 * The console's built files, by name relative to the build's folder (`index.html`, `assets/...`): a folder
 * beside the api function's bundle on AWS, the local runtime's in-memory build locally.
 */
export interface ConsoleAssets {
  read(name: string): Promise<Uint8Array | undefined>;
}

/** The placeholder the built page carries where each response's style nonce goes. */
export const styleNoncePlaceholder = '__DIFFERENTLY_STYLE_NONCE__';
