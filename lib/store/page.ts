/** A page of a listing: the caller's cursor and limit, the items and where the next page starts. */
export interface PageRequest {
  cursor?: string | undefined;
  limit: number;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}
