/**
 * Credentials must never appear in a message, a log or an audit event, in any encoding a provider,
 * plugin or library may echo them in: as sent, in any letter case (hex is written both ways), URL-encoded
 * (any character, either case of hex digits, `+` for a space), JSON-escaped (`\u0041`), hex, and base64
 * or base64url, also inside a longer value (`Bearer <secret>`, a Basic `user:secret` pair, a JSON token
 * blob): base64 of a secret inside another value depends on where it starts, so the secret's groups are
 * matched at each of the three alignments.
 */

/** Base64 runs of a secret inside another value shorter than this are too common to redact safely. */
const minRunLength = 6;

/**
 * The secret's encodings as plain strings (before per-character escapes), longest first: the secret, its
 * hex, its whole base64 and base64url (with and without padding), and the base64 and base64url runs that
 * encode only the secret's bytes when it starts at byte 0, 1 or 2 of a 3-byte group.
 */
export function secretForms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms = [
    secret,
    encodeURIComponent(secret),
    encodeURIComponent(secret).replaceAll('%20', '+'),
    bytes.toString('hex'),
    bytes.toString('base64'),
    bytes.toString('base64').replace(/=+$/, ''),
    bytes.toString('base64url'),
    JSON.stringify(secret).slice(1, -1),
  ];
  for (const offset of [0, 1, 2]) {
    const shifted = Buffer.concat([Buffer.alloc(offset), bytes]);
    // Whole groups that hold the secret's bytes only: from the first group starting at or after the
    // secret, to the last group ending at or before its end.
    const first = Math.ceil(offset / 3) * 4;
    const last = Math.floor(shifted.length / 3) * 4;
    if (last - first < minRunLength) continue;
    forms.push(
      shifted.toString('base64').slice(first, last),
      shifted.toString('base64url').slice(first, last),
    );
  }
  return [...new Set(forms)].filter((form) => form.length >= 4).sort((a, b) => b.length - a.length);
}

const regexSpecial = /[.*+?^${}()|[\]\\/-]/g;

/** One character as a pattern: itself, or percent-encoded (each UTF-8 byte), or a JSON \u escape. */
function characterPattern(char: string): string {
  const alternatives = [char.replace(regexSpecial, '\\$&')];
  const bytes = Buffer.from(char, 'utf8');
  alternatives.push([...bytes].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join(''));
  const code = char.codePointAt(0) ?? 0;
  if (code <= 0xffff) alternatives.push(`\\\\u${code.toString(16).padStart(4, '0')}`);
  if (char === ' ') alternatives.push('\\+');
  return `(?:${alternatives.join('|')})`;
}

/** Every form of `secret`, each character in any of its escapes, letter case ignored. */
function secretPattern(secret: string): string {
  return secretForms(secret)
    .map((form) => [...form].map(characterPattern).join(''))
    .join('|');
}

const patterns = new Map<string, RegExp>();

function patternOf(secret: string): RegExp {
  let pattern = patterns.get(secret);
  if (pattern === undefined) {
    pattern = new RegExp(secretPattern(secret), 'gi');
    // Secrets are few (a pool's credentials, a plugin's token); the map is bounded all the same.
    if (patterns.size > 256) patterns.clear();
    patterns.set(secret, pattern);
  }
  return pattern;
}

/** `text` with every form of every secret replaced by `[redacted]`. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length < 4) continue;
    out = out.replace(patternOf(secret), '[redacted]');
  }
  return out;
}
