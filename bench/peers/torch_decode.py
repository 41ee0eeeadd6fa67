#!/usr/bin/env python3
"""
Native peers of the GPU report's decode figures (bench/gpuReport.ts), on the same card in the
same run: the same two shapes (SmolLM2-135M and Qwen2.5-0.5B, random weights), the same rows
(1 and 32), prompt (64 tokens) and new tokens (128), sampled at temperature 1 over the whole
vocabulary, in PyTorch with CUDA, the reference every GPU machine for ML has:

  hf-eager   Hugging Face `generate` as a user calls it: eager PyTorch (no compile, no graph),
             its default attention (SDPA), the weights in bf16.
  cuda-graph A static-cache decode step (KV cache preallocated, positions as a tensor, the
             sampler inside the step) captured once in a CUDA graph and replayed per token:
             what a hand-tuned PyTorch decoder reaches without a serving engine. Its logits are
             checked against the Hugging Face model's on the same weights before it is timed.

Decode tokens/s are measured as the engine's are: the time of a run with N new tokens minus a
run with 1 (the prefill and first sample), over rows · (N − 1) tokens; median of 3.

  python3 bench/peers/torch_decode.py --out peers.json [--engine gpu.json] [--quick]

With --engine (the GPU report's JSON), the engine's run decides the prompt and new-token counts
and the shapes' layers and vocabulary (cut in a quick run), and the engine's pipelined figures
are printed beside the peers as ratios (engine / peer; above 1 the engine is faster).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

# The shapes of bench/trainCounts.ts (SMOLLM2_135M) and bench/decodeCounts.ts (QWEN25_05B), in the
# report's order (Qwen's first: a run cut short keeps the shape the goals are set on).
SHAPES = {
    'Qwen2.5-0.5B': dict(arch='qwen2', vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                         num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768, rms_norm_eps=1e-6,
                         rope_theta=1e6, tie_word_embeddings=True, attention_bias=True),
    'SmolLM2-135M': dict(arch='llama', vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192, rms_norm_eps=1e-5,
                         rope_theta=100000.0, tie_word_embeddings=True, attention_bias=False),
}


def hf_model(shape: dict, dtype: torch.dtype, device: str, layers: int | None, vocab: int | None):
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    s = {k: v for k, v in shape.items() if k != 'arch'}
    if layers:
        s['num_hidden_layers'] = layers
    if vocab:
        s['vocab_size'] = vocab
    if shape['arch'] == 'qwen2':
        s.pop('attention_bias')
        config, cls = Qwen2Config(**s), Qwen2ForCausalLM
    else:
        config, cls = LlamaConfig(**s), LlamaForCausalLM
    torch.manual_seed(1)
    model = cls(config).to(device=device, dtype=dtype).eval()
    return model


class StaticDecoder:
    """The model's decoder over its own weights with a preallocated KV cache: every shape is
    fixed and positions are a tensor, so one step can be captured in a CUDA graph."""

    def __init__(self, model, rows: int, slots: int):
        c = model.config
        self.m = model.model
        self.head = model.lm_head.weight
        self.H, self.KV = c.num_attention_heads, c.num_key_value_heads
        self.hd = c.hidden_size // c.num_attention_heads
        self.eps = c.rms_norm_eps
        dev, dt = self.head.device, self.head.dtype
        L = len(self.m.layers)
        self.k = torch.zeros(L, rows, self.KV, slots, self.hd, device=dev, dtype=dt)
        self.v = torch.zeros_like(self.k)
        self.slots = torch.arange(slots, device=dev)
        # transformers 5 keeps it in rope_parameters, 4 as rope_theta.
        theta = getattr(c, 'rope_parameters', None)['rope_theta'] if getattr(c, 'rope_parameters', None) else c.rope_theta
        self.inv_freq = 1.0 / (theta ** (torch.arange(0, self.hd, 2, device=dev, dtype=torch.float32) / self.hd))

    def norm(self, x, w):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * w

    def rope(self, x, cos, sin):
        h = x.shape[-1] // 2
        rot = torch.cat((-x[..., h:], x[..., :h]), dim=-1)
        return (x.float() * cos + rot.float() * sin).to(x.dtype)

    def forward(self, ids, pos):
        """Logits of the last position of `ids` [B, T] at positions `pos` [T], the cache updated."""
        B, T = ids.shape
        x = self.m.embed_tokens(ids)
        freqs = pos.float()[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        mask = self.slots[None, :] <= pos[:, None]  # [T, slots]: causal over what the cache holds
        for i, layer in enumerate(self.m.layers):
            a = layer.self_attn
            h = self.norm(x, layer.input_layernorm.weight)
            q = a.q_proj(h).view(B, T, self.H, self.hd).transpose(1, 2)
            k = a.k_proj(h).view(B, T, self.KV, self.hd).transpose(1, 2)
            v = a.v_proj(h).view(B, T, self.KV, self.hd).transpose(1, 2)
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
            self.k[i].index_copy_(2, pos, k)
            self.v[i].index_copy_(2, pos, v)
            o = F.scaled_dot_product_attention(q, self.k[i], self.v[i], attn_mask=mask, enable_gqa=True)
            x = x + a.o_proj(o.transpose(1, 2).reshape(B, T, self.H * self.hd))
            h = self.norm(x, layer.post_attention_layernorm.weight)
            mlp = layer.mlp
            x = x + mlp.down_proj(F.silu(mlp.gate_proj(h)) * mlp.up_proj(h))
        x = self.norm(x[:, -1], self.m.norm.weight)
        return x @ self.head.t()


def sample(logits):
    """One token per row at temperature 1 over the whole vocabulary (Gumbel-max: graph-safe)."""
    u = torch.rand_like(logits, dtype=torch.float32).clamp_(1e-20, 1.0)
    return torch.argmax(logits.float() - torch.log(-torch.log(u)), dim=-1)


def check_static(model, device: str) -> float:
    """Largest |logit difference| between StaticDecoder (prefill, then one cached step) and the model."""
    torch.manual_seed(3)
    V = model.config.vocab_size
    ids = torch.randint(3, min(V, 250), (2, 12), device=device)
    d = StaticDecoder(model, 2, 32)
    with torch.no_grad():
        ref = model(ids).logits[:, -1].float()
        ours_pre = d.forward(ids[:, :-1], torch.arange(11, device=device))
        ours = d.forward(ids[:, -1:], torch.tensor([11], device=device)).float()
        ref_pre = model(ids[:, :-1]).logits[:, -1].float()
    return max((ours - ref).abs().max().item(), (ours_pre.float() - ref_pre).abs().max().item())


def sync(device: str):
    if device == 'cuda':
        torch.cuda.synchronize()


def timed(fn, device: str) -> float:
    sync(device)
    t0 = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - t0


def decode_rate(run, rows: int, new: int, device: str) -> float:
    """rows · (new − 1) / (t(new) − t(1)), median of 3 after a warm-up."""
    run(2)
    longs, shorts = [], []
    for _ in range(3):
        shorts.append(timed(lambda: run(1), device))
        longs.append(timed(lambda: run(new), device))
    return rows * (new - 1) / (statistics.median(longs) - statistics.median(shorts))


def hf_eager(model, prompts, new: int, device: str) -> float:
    mask = torch.ones_like(prompts)

    def run(n):
        with torch.no_grad():
            model.generate(prompts, attention_mask=mask, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                           max_new_tokens=n, min_new_tokens=n, pad_token_id=0)

    return decode_rate(run, prompts.shape[0], new, device)


def cuda_graph(model, prompts, new: int, device: str) -> float:
    B, P = prompts.shape
    d = StaticDecoder(model, B, P + new)
    tok = torch.zeros(B, 1, dtype=torch.long, device=device)
    pos = torch.zeros(1, dtype=torch.long, device=device)
    out = torch.zeros(B, new, dtype=torch.long, device=device)

    def step():
        nxt = sample(d.forward(tok, pos))
        tok.copy_(nxt[:, None])
        pos.add_(1)

    graph = None
    if device == 'cuda':
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s), torch.no_grad():
            for _ in range(3):  # warm-up on a side stream before capture, as PyTorch asks
                pos.fill_(P)
                step()
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph), torch.no_grad():
            step()

    def run(n):
        with torch.no_grad():
            tok.copy_(sample(d.forward(prompts, torch.arange(P, device=device)))[:, None])
            pos.fill_(P)
            for k in range(n - 1):
                graph.replay() if graph else step()
                out[:, k] = tok[:, 0]  # kept on the GPU: the host reads nothing per token

    return decode_rate(run, B, new, device)


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--out', help='JSON record to write')
    p.add_argument('--engine', help="the GPU report's JSON (bench/node/gpu.ts): ratios engine / peer")
    p.add_argument('--quick', action='store_true', help='1 layer, vocabulary 4,096, 8-token prompts, 6 new tokens: a smoke test (with --engine, its run decides)')
    p.add_argument('--rows', default='1,32')
    p.add_argument('--prompt', type=int, default=64)
    p.add_argument('--new', type=int, default=128)
    p.add_argument('--dtype', default='bfloat16', choices=['bfloat16', 'float16', 'float32'])
    a = p.parse_args()
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    dtype = getattr(torch, a.dtype)
    engine = json.load(open(a.engine)) if a.engine else None
    # --quick cuts the shapes as the GPU report's quick run does (1 layer, vocabulary 4,096); the
    # engine's run decides, also for a shape its report does not hold (one cut short).
    quick = engine.get('quick', a.quick) if engine else a.quick
    layers, vocab, prompt, new = (1, 4096, 8, 6) if quick else (None, None, a.prompt, a.new)
    if engine:  # the engine's own run decides the counts and the shapes' cuts
        prompt, new = engine['prompt'], engine['newTokens']
    cut = {m['model']: (m['layers'], m['vocab']) for m in engine['models']} if engine else {}
    rows_list = [int(r) for r in a.rows.split(',')]
    record = {
        'device': torch.cuda.get_device_name(0) if device == 'cuda' else 'cpu',
        'torch': torch.__version__, 'dtype': a.dtype, 'prompt': prompt, 'newTokens': new, 'quick': quick, 'models': [],
    }
    try:
        import transformers
        record['transformers'] = transformers.__version__
    except ImportError:
        pass
    print(f"peers: {record['device']}, torch {torch.__version__}, {a.dtype}", file=sys.stderr)
    for name, shape in SHAPES.items():
        m = {'model': name, 'decode': [], 'errors': []}
        try:
            # The check runs in f32 so that a mismatch means a wrong decoder, not rounding.
            ref = hf_model(shape, torch.float32, device, 2, vocab or 4096)
            m['staticCheckMaxAbsLogitDiff'] = check_static(ref, device)
            del ref
            model = hf_model(shape, dtype, device, *cut.get(name, (layers, vocab)))
            m['layers'], m['vocab'] = model.config.num_hidden_layers, model.config.vocab_size
            V = model.config.vocab_size
            for rows in rows_list:
                g = torch.Generator().manual_seed(rows)
                prompts = torch.randint(3, min(V, 250), (rows, prompt), generator=g).to(device)
                fig = {'rows': rows}
                for peer, fn in (('hf-eager', hf_eager), ('cuda-graph', cuda_graph)):
                    try:
                        fig[peer] = fn(model, prompts, new, device)
                        print(f'peers: {name} B={rows} {peer}: {fig[peer]:.1f} tokens/s', file=sys.stderr)
                    except Exception as e:  # one peer failing leaves the others' figures
                        m['errors'].append(f'{peer} B={rows}: {type(e).__name__}: {e}')
                m['decode'].append(fig)
            del model
            if device == 'cuda':
                torch.cuda.empty_cache()
        except Exception as e:
            m['errors'].append(f'{type(e).__name__}: {e}')
        record['models'].append(m)
        if a.out:  # after each shape, replaced whole: a run stopped part-way keeps the shapes it finished
            with open(a.out + '.part', 'w') as f:
                json.dump(record, f, indent=2)
            os.replace(a.out + '.part', a.out)
    if engine:
        print(ratio_table(record, engine))


def ratio_table(peers: dict, engine: dict) -> str:
    """Markdown: the engine's pipelined decode beside each peer, and engine / peer."""
    # Without CUDA the static-cache step runs as it is, with no graph to replay.
    graph = 'CUDA graph, static cache' if peers['device'] != 'cpu' else 'static cache (CPU: no graph)'
    lines = [f"Decode tokens/s on {peers['device']}, {engine['prompt']}-token prompts, {engine['newTokens']} new tokens, random weights "
             f"(engine: f16 base through WebGPU; peers: PyTorch {peers['torch']}, {peers['dtype']})", '',
             f"| model | rows | engine (pipelined) | engine (synchronous) | HF generate, eager | ratio | {graph} | ratio |",
             '|:--|--:|--:|--:|--:|--:|--:|--:|']
    for pm in peers['models']:
        em = next((m for m in engine['models'] if m['model'] == pm['model']), None)
        for pd in pm['decode']:
            ed = next((d for d in (em or {}).get('decode', []) if d['rows'] == pd['rows']), None)
            e = ed['tokensPerS'] if ed else math.nan
            s = ed['synchronous']['tokensPerS'] if ed and 'synchronous' in ed else math.nan
            h, g = pd.get('hf-eager', math.nan), pd.get('cuda-graph', math.nan)
            lines.append(f"| {pm['model']} | {pd['rows']} | {e:,.1f} | {s:,.1f} | {h:,.1f} | {e / h:.2f} | {g:,.1f} | {e / g:.2f} |")
    return '\n'.join(lines)


if __name__ == '__main__':
    main()
