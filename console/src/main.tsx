import '@xterm/xterm/css/xterm.css';
import 'uplot/dist/uPlot.min.css';
import './styles.css';
import { render } from 'preact';
import { App } from './app.tsx';

/**
 * The page's style nonce (lib/console/serve.ts) given to every `<style>` element a script makes: the
 * terminal widget writes its measurements into some, and the policy runs no other inline style.
 */
const nonce = document.querySelector<HTMLMetaElement>('meta[name="style-nonce"]')?.content ?? '';
const createElement = document.createElement.bind(document);
document.createElement = ((tag: string, options?: ElementCreationOptions) => {
  const element = createElement(tag, options);
  if (tag.toLowerCase() === 'style') element.setAttribute('nonce', nonce);
  return element;
}) as typeof document.createElement;

const root = document.getElementById('app');
if (root !== null) {
  root.textContent = '';
  render(<App />, root);
}
