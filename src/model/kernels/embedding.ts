import { distinctBuffers, grid } from '../../gpu/ops/common';
import { Params } from '../../gpu/params';
import type { Runtime } from '../../gpu/runtime';
import type { Tensor } from '../../gpu/tensor';

/**
 * out[t, :] = W[tokens[t], :]. tokens: u32 [n]; W: [vocab, H], f32 or f16; out: [n, H], f32,
 * or f16 with W f16 (rows of halves copied bit for bit as words: H and both offsets even).
 * With `via` (u32 [n]) row t takes tokens[via[t]] instead: tokens held by batch row on the GPU.
 */
export function embeddingForward(rt: Runtime, tokens: Tensor<'u32'>, W: Tensor, out: Tensor, via?: Tensor<'u32'>): Tensor {
  const H = W.shape[W.shape.length - 1]!;
  const n = via?.size ?? tokens.size;
  if (out.size !== n * H) throw new Error(`embedding: output holds ${out.size}, need ${n}×${H}`);
  distinctBuffers('embedding', [out], [W]);
  const words = out.dtype === 'f16';
  if (words && (W.dtype !== 'f16' || H % 2 || W.offset % 2 || out.offset % 2)) {
    throw new Error(`embedding into halves: needs an f16 table, rows and offsets of whole words (got ${W.dtype} rows of ${H} at ${W.offset}, out at ${out.offset})`);
  }
  const w = words ? 2 : 1;
  rt.dispatch({
    kernel: { shader: 'embedding', entry: 'embedding_forward', defines: { WORDS: words, W_F16: W.dtype === 'f16', GATHER: via !== undefined } },
    params: new Params().u32(n, H / w, W.offset / w, out.offset / w, 0, via?.offset ?? 0, 0, tokens.offset),
    buffers: via ? [tokens, W, out, via] : [tokens, W, out],
    workgroups: grid(rt, (n * H) / w),
    label: 'embedding_forward',
  });
  return out;
}

/**
 * Groups the positions of each distinct token (CSR on the host, where token ids live):
 * [token_0..token_{U-1}, start_0..start_U, positions...].
 */
export function tokenIndex(tokens: ArrayLike<number>): { index: Uint32Array; unique: number } {
  const byToken = new Map<number, number[]>();
  for (let t = 0; t < tokens.length; t++) {
    const id = tokens[t]!;
    let list = byToken.get(id);
    if (!list) byToken.set(id, (list = []));
    list.push(t);
  }
  const ids = [...byToken.keys()].sort((a, b) => a - b);
  const U = ids.length;
  const index = new Uint32Array(U + U + 1 + tokens.length);
  let k = 0;
  ids.forEach((id, u) => {
    index[u] = id;
    index[U + u] = k;
    for (const pos of byToken.get(id)!) index[2 * U + 1 + k++] = pos;
  });
  index[2 * U] = k;
  return { index, unique: U };
}

/** dW[tokens[t], :] += dy[t, :], with `index` from tokenIndex (uploaded as u32). */
export function embeddingBackward(
  rt: Runtime,
  index: Tensor<'u32'>,
  unique: number,
  dy: Tensor,
  dW: Tensor,
): Tensor {
  const H = dW.shape[dW.shape.length - 1]!;
  distinctBuffers('embedding backward', [dW], [dy]);
  rt.dispatch({
    kernel: { shader: 'embedding', entry: 'embedding_backward' },
    params: new Params().u32(0, H, 0, dW.offset, unique, index.offset, dy.offset, 0),
    buffers: [null, null, dW, index, dy],
    workgroups: grid(rt, unique * H),
    label: 'embedding_backward',
  });
  return dW;
}
