import { describe, expect, it } from 'vitest';
import { SETTING_NAMES } from '../../sage/settings';
import { NUMERIC_SETTINGS } from '../runSlices';
import { groupSettings, SETTING_ENTRIES, SETTING_GROUPS, settingHelp, type ShownSetting } from './settingGroups';

describe('the settings as the lab groups them', () => {
  it('places every setting a run takes (but the token limits, set by the prompts) in exactly one group, once', () => {
    const placed = SETTING_GROUPS.flatMap((g) => {
      const { shown, folded } = groupSettings(g.name);
      return [...shown, ...folded];
    });
    expect(new Set(placed).size).toBe(placed.length);
    const expected = new Set<string>([...NUMERIC_SETTINGS, ...SETTING_NAMES.filter((n) => n !== 'maxNewTokens')]);
    expect(new Set(placed)).toEqual(expected);
  });

  it('shows at least one setting of each group at once, the common ones first', () => {
    for (const g of SETTING_GROUPS) {
      const { shown, folded } = groupSettings(g.name);
      expect(shown.length, g.name).toBeGreaterThan(0);
      expect(shown.every((n) => SETTING_ENTRIES[n].common)).toBe(true);
      expect(folded.some((n) => SETTING_ENTRIES[n].common)).toBe(false);
    }
  });

  it('gives each a label in words, not its identifier, and an explanation', () => {
    for (const name of Object.keys(SETTING_ENTRIES) as ShownSetting[]) {
      expect(SETTING_ENTRIES[name].label, name).not.toBe(name);
      expect(SETTING_ENTRIES[name].label, name).toMatch(/^[A-Z]/);
      expect(settingHelp(name).length, name).toBeGreaterThan(15);
    }
  });
});
