// Ids of integer identity columns (rules, rulesets): what a query may compare them with.

/** The largest value of a PostgreSQL integer (int4). */
export const MAX_ROW_ID = 2_147_483_647;

/** An id an integer identity column can hold; anything else cannot exist, and pg would reject it as a bad parameter. */
export function isRowId(id: number): boolean {
  return Number.isSafeInteger(id) && id >= 1 && id <= MAX_ROW_ID;
}
