/** A caught value's text for a message: an Error's message, anything else as a string. */
export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
