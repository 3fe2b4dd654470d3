/**
 * Credentials must never appear in a message, a log or an audit event, in any encoding a provider or
 * plugin may echo them in: as sent, URL-encoded (a query or form), base64 or base64url (a header or a
 * token blob), hex, or JSON-escaped.
 */
export function secretForms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms = [
    secret,
    encodeURIComponent(secret),
    encodeURIComponent(secret).replaceAll('%20', '+'),
    bytes.toString('base64'),
    bytes.toString('base64').replace(/=+$/, ''),
    bytes.toString('base64url'),
    bytes.toString('hex'),
    JSON.stringify(secret).slice(1, -1),
  ];
  // Longest first, so a form is replaced before a shorter one it contains.
  return [...new Set(forms)].filter((form) => form.length >= 4).sort((a, b) => b.length - a.length);
}

/** `text` with every form of every secret replaced by `[redacted]`. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length < 4) continue;
    for (const form of secretForms(secret)) out = out.split(form).join('[redacted]');
  }
  return out;
}
