/** The label keys every backend instance carries so List and the reconciler can find their owner. */
export const ownershipLabelKeys = {
  sandboxId: 'differently.dev/sandbox-id',
  installation: 'differently.dev/installation',
} as const;

/** The ownership labels over the sandbox's own (which can never override them). */
export function ownershipLabels(
  sandboxId: string,
  installation: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    ...extra,
    [ownershipLabelKeys.sandboxId]: sandboxId,
    [ownershipLabelKeys.installation]: installation,
  };
}
