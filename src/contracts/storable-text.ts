// Text the SQL store can hold: PostgreSQL's text and jsonb refuse U+0000, and an unpaired surrogate has no UTF-8 form.

export const UNSTORABLE_TEXT = 'must not contain the character U+0000 or an unpaired UTF-16 surrogate';

export function isStorableText(text: string): boolean {
  return !text.includes('\u0000') && text.isWellFormed();
}
