/** npm run bench: every benchmark in turn, each printing its own figures. */
await import('./store.bench.ts');
await import('./throughput.bench.ts');
await import('./queues.bench.ts');
await import('./reconcile.bench.ts');
await import('./stream.bench.ts');
await import('./stream-abuse.bench.ts');
await import('./e2b.bench.ts');
await import('./warm.bench.ts');
await import('./bundles.bench.ts');
