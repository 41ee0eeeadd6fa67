import { createElement } from 'react';
import { renderToString } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { compareCli } from './cli/compare';
import { evalCli } from './cli/eval';
import { evolveCli } from './cli/evolve';
import { helpText } from './cli/options';
import { COMPARED_METHODS, DEFAULT_METHOD, METHODS } from './sage/config';
import { RunsPanel } from './ui/run/RunsPanel';
import { SettingsPanel } from './ui/run/SettingsPanel';

/**
 * A method is one entry in the registry (METHODS): every place a person picks one reads it from
 * there, so a new entry appears in each without other edits, and none lists a method the
 * registry lacks.
 */
describe('the methods registry is the one list of methods', () => {
  const names = Object.keys(METHODS);

  it('the command lines offer exactly its methods, and their help names each', () => {
    expect(evolveCli.options.method.choices).toEqual(names);
    expect(evalCli.options.method.choices).toEqual(names);
    // compare adds its ceiling, a method run on other seeds, after the registry's.
    expect(compareCli.options.methods.choices.slice(0, names.length)).toEqual(names);
    for (const help of [helpText(evolveCli), helpText(evalCli), helpText(compareCli)]) for (const m of names) expect(help).toContain(m);
  });

  it('the page offers exactly its methods, in the settings and in a comparison', () => {
    const values = (html: string, re: RegExp) => [...html.matchAll(re)].map((m) => m[1]);
    const menu = /<select[^>]*data-testid="method"[^>]*>(.*?)<\/select>/.exec(renderToString(createElement(SettingsPanel)))?.[1] ?? '';
    expect(values(menu, /<option value="([^"]+)"/g)).toEqual(names);
    expect(values(renderToString(createElement(RunsPanel)), /data-testid="compare-method-([^"]+)"/g)).toEqual(names);
  });

  it('the defaults are its entries', () => {
    expect(names).toContain(DEFAULT_METHOD);
    for (const m of COMPARED_METHODS) expect(names).toContain(m);
  });
});
