// Generated from api/openapi.yaml by openapi-typescript; do not edit by hand.
export interface Order {
  id: string;
  /** @deprecated Identifier of the order in the old shop. */
  legacyId?: number;
  status: "pending" | "paid" | "shipped" | "cancelled";
  total: number;
  currency: string;
}
