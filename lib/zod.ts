/**
 * The validation library every module of the control plane imports: zod's mini API, with zod's English
 * messages. Mini builds the same schemas and issues as zod's classic API from functions instead of methods
 * (`z.optional(s)`, `s.check(z.minLength(1))`), which tree-shake: a function's cold start loads and runs
 * a quarter of classic's code, and each schema is built with fewer intermediate copies (docs/performance.md
 * has the figures). Classic sets its English messages on first use; mini leaves the choice to its user,
 * so it is made here, once, before any schema parses.
 */
import { config } from 'zod/mini';
import english from 'zod/v4/locales/en.js';

config(english());

export * from 'zod/mini';
