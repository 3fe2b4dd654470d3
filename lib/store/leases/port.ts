/**
 * Named leases: what singletons (the reconciler) rely on rather than on the platform running one copy.
 */
export interface LeaseStore {
  /**
   * Takes a named lease until `until` if it is free or expired; false when another owner holds it.
   * Singletons (the reconciler) rely on it rather than on the platform running one copy.
   */
  acquireLease(name: string, owner: string, until: string, now: string): Promise<boolean>;

  releaseLease(name: string, owner: string): Promise<void>;
}
