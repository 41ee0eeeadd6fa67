import { describe, expect, it } from 'vitest';
import { preprocess } from './wgsl';

describe('wgsl preprocess', () => {
  it('selects #if / #else branches, nested and negated', () => {
    const src = ['a', '#if X', 'b', '#if !Y', 'c', '#else', 'd', '#endif', '#else', 'e', '#endif', 'f'].join('\n');
    expect(preprocess(src, { X: true }).split('\n')).toEqual(['a', 'b', 'c', 'f']);
    expect(preprocess(src, { X: true, Y: true }).split('\n')).toEqual(['a', 'b', 'd', 'f']);
    expect(preprocess(src, {}).split('\n')).toEqual(['a', 'e', 'f']);
  });

  it('unrolls nested #for loops', () => {
    const src = ['#for i in 0..2', '#for j in 1..3', 'v{{i}}{{j}} = {{i}} * {{j}};', '#endfor', '#endfor'].join('\n');
    expect(preprocess(src).split('\n')).toEqual(['v01 = 0 * 1;', 'v02 = 0 * 2;', 'v11 = 1 * 1;', 'v12 = 1 * 2;']);
  });

  it('takes #for bounds from numeric defines', () => {
    expect(preprocess('#for i in 0..N\nx{{i}}\n#endfor', { N: 3 }).split('\n')).toEqual(['x0', 'x1', 'x2']);
    expect(() => preprocess('#for i in 0..N\nx\n#endfor', {})).toThrow(/not an integer define/);
  });

  it('writes numeric defines into {{NAME}} outside the loops, and refuses any other name', () => {
    const src = ['const M = {{M}}u;', '#for i in 0..2', 'x{{i}} = {{M}};', '#endfor'].join('\n');
    expect(preprocess(src, { M: 16 }).split('\n')).toEqual(['const M = 16u;', 'x0 = 16;', 'x1 = 16;']);
    expect(() => preprocess('a = {{M}};', { M: true })).toThrow(/\{\{M\}\} is neither a #for variable nor a numeric define/);
    expect(() => preprocess('a = {{i}};', {})).toThrow(/\{\{i\}\}/);
  });

  it('inlines #include files, recursively, and refuses cycles', () => {
    const files: Record<string, string> = { a: 'A1\n#include b', b: 'B1', c: '#include c' };
    expect(preprocess('x\n#include a\ny', {}, (n) => files[n]!).split('\n')).toEqual(['x', 'A1', 'B1', 'y']);
    expect(() => preprocess('#include c', {}, (n) => files[n]!)).toThrow(/#include cycle c -> c/);
    expect(() => preprocess('#include a')).toThrow(/without an include source/);
  });

  it('rejects malformed directives', () => {
    expect(() => preprocess('#if X\nfoo')).toThrow(/unterminated #if/);
    expect(() => preprocess('#endif')).toThrow(/#endif without #if/);
    expect(() => preprocess('#for i in 0..2\nx')).toThrow(/unterminated #for/);
    expect(() => preprocess('#define X 1')).toThrow(/unknown directive/);
  });
});
