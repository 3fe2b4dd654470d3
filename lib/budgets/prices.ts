import * as z from '../zod.ts';

/**
 * Money is kept in micro-units (millionths of whatever currency the operator prices in) as integers:
 * sums stay exact in JavaScript and in DynamoDB's numbers, whatever order reservations settle in.
 */
export const microsPerUnit = 1_000_000;

/** The largest monthly budget: its micros, and every sum below it, stay exact integers in JavaScript. */
export const maxBudget = 1_000_000_000;

export function toMicros(amount: number): number {
  return Math.round(amount * microsPerUnit);
}

export function fromMicros(micros: number): number {
  return micros / microsPerUnit;
}

const rate = z.number().check(z.gte(0), z.lte(1_000));

/** What a second costs in one state of a sandbox: per vCPU and per GiB of memory. */
const statePriceSchema = z.strictObject({
  perVcpuSecond: z._default(rate, 0),
  perGiBSecond: z._default(rate, 0),
});

const freeState = { perVcpuSecond: 0, perGiBSecond: 0 };

/**
 * A pool's price model (config and admin API): a price per create, and per vCPU-second and per
 * GiB-second of memory in each billed state. Running covers the transitional states too (starting,
 * stopping, pausing, resuming: the instance is held at full size); paused and stopped have their own
 * rates. Zero by default: a pool with no prices costs nothing and never touches a budget.
 */
export const poolPricesSchema = z.strictObject({
  perCreate: z._default(z.number().check(z.gte(0), z.lte(1_000_000)), 0),
  running: z._default(statePriceSchema, freeState),
  paused: z._default(statePriceSchema, freeState),
  stopped: z._default(statePriceSchema, freeState),
});
export type PoolPrices = z.infer<typeof poolPricesSchema>;

export const freePrices: PoolPrices = {
  perCreate: 0,
  running: freeState,
  paused: freeState,
  stopped: freeState,
};

/** Whether a pool charges anything: one that does not never touches a budget. */
export function billable(prices: PoolPrices | undefined): boolean {
  if (prices === undefined) return false;
  const { perCreate, running, paused, stopped } = prices;
  return [
    perCreate,
    ...[running, paused, stopped].flatMap((state) => [state.perVcpuSecond, state.perGiBSecond]),
  ].some((price) => price > 0);
}

/** A sandbox's own rates on a pool, in micros: per create, and per second in each billed state. */
export const sandboxRatesSchema = z.object({
  create: z.number(),
  running: z.number(),
  paused: z.number(),
  stopped: z.number(),
});
export type SandboxRates = z.infer<typeof sandboxRatesSchema>;

export function ratesOf(
  prices: PoolPrices | undefined,
  resources: { cpu: number; memoryMiB: number },
): SandboxRates {
  const model = prices ?? freePrices;
  const perSecond = (state: { perVcpuSecond: number; perGiBSecond: number }) =>
    (resources.cpu * state.perVcpuSecond + (resources.memoryMiB / 1024) * state.perGiBSecond) * microsPerUnit;
  return {
    create: model.perCreate * microsPerUnit,
    running: perSecond(model.running),
    paused: perSecond(model.paused),
    stopped: perSecond(model.stopped),
  };
}

/** The dearest second of a sandbox: what its reservation assumes for every second it may live. */
export function maxRate(rates: SandboxRates): number {
  return Math.max(rates.running, rates.paused, rates.stopped);
}

/** Hourly cost at the running rate, in currency units: what placement ranks by when no costModel is set. */
export function runningHourly(prices: PoolPrices | undefined, resources: { cpu: number; memoryMiB: number }) {
  return (ratesOf(prices, resources).running * 3600) / microsPerUnit;
}
