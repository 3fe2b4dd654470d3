import { describe, expect, it } from 'vitest';
import { apiEndpoint } from '../../../console/src/endpoint.ts';

/** The two fields of a page's location the endpoint is made of. */
const page = (href: string) => {
  const url = new URL(href);
  return { origin: url.origin, pathname: url.pathname };
};

describe("the console's API endpoint", () => {
  it('is where the console is served, without /console/: locally, and under API Gateway’s stage', () => {
    expect(apiEndpoint(page('http://127.0.0.1:8080/console/'))).toBe('http://127.0.0.1:8080');
    expect(apiEndpoint(page('https://abc.execute-api.eu-west-1.amazonaws.com/live/console/#/audit'))).toBe(
      'https://abc.execute-api.eu-west-1.amazonaws.com/live',
    );
    expect(apiEndpoint(page('https://console.example.com/differently/console/index.html'))).toBe(
      'https://console.example.com/differently',
    );
  });
});
