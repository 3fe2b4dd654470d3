/**
 * The API's base URL: where the console is served, without `/console/` (a stage prefix stays). Takes
 * the page's location's two fields, so that it reads no browser global (and Node's tests run it).
 */
export function apiEndpoint(location: { origin: string; pathname: string }): string {
  const at = location.pathname.lastIndexOf('/console');
  return `${location.origin}${at < 0 ? '' : location.pathname.slice(0, at)}`;
}
