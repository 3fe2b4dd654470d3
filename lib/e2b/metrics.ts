import type { SandboxService } from '../sandboxes/service.ts';
import type { OrgPrincipal } from '../tenancy/auth.ts';
import * as z from '../zod.ts';

/**
 * E2B's getMetrics, measured inside the sandbox at the call (no backend reports a sandbox's usage in one
 * shape, and nothing keeps a series): one POSIX sh script reads the sandbox's own cgroup where it has one
 * (a container: its limits and usage), else /proc (a VM's own numbers; on devhost, which has no limits,
 * the host's), and `df` for the disk of `/`. CPU is the busy share over half a second.
 */
const metricsScript = `
cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
cg=/sys/fs/cgroup
if [ -r "$cg/cpu.max" ]; then
  read -r quota period < "$cg/cpu.max"
  if [ "$quota" != max ] && [ "$period" -gt 0 ] 2>/dev/null; then
    cpus=$(awk -v q="$quota" -v p="$period" 'BEGIN { c = q / p; if (c < 1) c = 1; printf "%d", c + 0.999 }')
  fi
fi
if [ -r "$cg/cpu.stat" ]; then
  a=$(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat"); sleep 0.5
  b=$(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat")
  pct=$(awk -v a="$a" -v b="$b" -v c="$cpus" 'BEGIN { printf "%.2f", (b - a) / (5000 * c) }')
else
  a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat); sleep 0.5
  b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat)
  pct=$(echo "$a $b" | awk '{ t = $4 - $2; p = 0; if (t > 0) p = 100 * ($3 - $1) / t; printf "%.2f", p }')
fi
memTotal=$(awk '/^MemTotal:/ { printf "%.0f", $2 * 1024 }' /proc/meminfo)
memUsed=$(awk '/^MemTotal:/ { t = $2 } /^MemAvailable:/ { a = $2 } END { printf "%.0f", (t - a) * 1024 }' /proc/meminfo)
memCache=$(awk '/^Cached:/ { printf "%.0f", $2 * 1024 }' /proc/meminfo)
if [ -r "$cg/memory.current" ]; then
  memUsed=$(cat "$cg/memory.current")
  limit=$(cat "$cg/memory.max" 2>/dev/null)
  [ -n "$limit" ] && [ "$limit" != max ] && memTotal=$limit
  memCache=$(awk '/^file / { print $2 }' "$cg/memory.stat" 2>/dev/null)
fi
disk=$(df -kP / 2>/dev/null | awk 'NR == 2 { printf "%.0f %.0f", $3 * 1024, $2 * 1024 }')
[ -n "$memCache" ] || memCache=0
[ -n "$disk" ] || disk="0 0"
echo "$cpus $pct $memUsed $memTotal $memCache $disk"
`;

const sampleSchema = z.tuple([
  z.number(),
  z.number(),
  z.number(),
  z.number(),
  z.number(),
  z.number(),
  z.number(),
]);

/** One E2B SandboxMetric, now; none while the sandbox is not running (nothing runs to measure it). */
export async function measureSandbox(
  sandboxes: SandboxService,
  principal: OrgPrincipal,
  id: string,
): Promise<unknown[]> {
  const sandbox = await sandboxes.get(principal, id);
  if (sandbox.status !== 'running') return [];
  const result = await sandboxes.exec(principal, id, {
    args: ['/bin/sh', '-c', metricsScript],
    timeoutSeconds: 10,
  });
  const sample = sampleSchema.safeParse(result.stdout.trim().split(/\s+/).map(Number));
  if (result.exitCode !== 0 || !sample.success) return [];
  const [cpuCount, cpuUsedPct, memUsed, memTotal, memCache, diskUsed, diskTotal] = sample.data;
  return [
    {
      timestamp: new Date().toISOString(),
      timestampUnix: Math.floor(Date.now() / 1000),
      cpuCount,
      cpuUsedPct: Math.min(100, Math.max(0, cpuUsedPct)),
      memUsed,
      memTotal,
      memCache,
      diskUsed,
      diskTotal,
    },
  ];
}
