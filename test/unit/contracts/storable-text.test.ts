import { describe, expect, it } from 'vitest';
import { isStorableText } from '../../../src/contracts/storable-text.ts';

describe('isStorableText', () => {
  it('accepts any well-formed text, surrogate pairs included', () => {
    for (const text of ['', 'plain', 'café', '日本語', '😀 pair', 'tab\tand\nnewline', '\u0001'])
      expect(isStorableText(text), text).toBe(true);
  });

  it('refuses U+0000 and unpaired surrogates anywhere in the text', () => {
    for (const text of ['\u0000', 'a\u0000b', '\ud800', 'x\udc00', '\ude00\ud83d', 'end\ud83d'])
      expect(isStorableText(text), JSON.stringify(text)).toBe(false);
  });
});
