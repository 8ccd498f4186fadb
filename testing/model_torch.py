#!/usr/bin/python3
"""PyTorch twin of trainer/model/decoder.ts: the yardstick of `npm run bench:model`, and an independent
reference implementation for test/model/torch-reference.test.ts.

Same equations as the tfjs decoder (RMSNorm, rotate-half RoPE with Llama-3 frequency scaling, grouped-query
attention with causal + padding mask, SwiGLU, tied or separate head), parameters named as Hugging Face does.

  model_torch.py logits DIR IDS_JSON        print {"logits": [[...]]} for one sequence of a saved checkpoint
  model_torch.py bench CONFIG_JSON          print one JSON line of training / generation tokens per second

Runs on Debian's python3-torch (1.13) with numpy; reads safetensors without the safetensors package.
"""
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def read_safetensors(path):
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, e in header.items():
        if name == '__metadata__':
            continue
        b, end = e['data_offsets']
        raw = data[b:end]
        if e['dtype'] == 'F32':
            arr = np.frombuffer(raw, dtype='<f4')
        elif e['dtype'] == 'F16':
            arr = np.frombuffer(raw, dtype='<f2').astype(np.float32)
        elif e['dtype'] == 'BF16':
            arr = (np.frombuffer(raw, dtype='<u2').astype(np.uint32) << 16).view(np.float32)
        else:
            raise ValueError(f'{path}: unsupported dtype {e["dtype"]}')
        out[name] = torch.from_numpy(arr.copy().reshape(e['shape']))
    return out


def inv_freq(cfg):
    hd = cfg['head_dim']
    inv = 1.0 / (cfg.get('rope_theta', 10000.0) ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    rs = cfg.get('rope_scaling')
    kind = (rs or {}).get('rope_type', (rs or {}).get('type', 'default'))
    if kind == 'linear':
        inv = inv / rs['factor']
    elif kind == 'llama3':
        factor, lo, hi, old = rs['factor'], rs['low_freq_factor'], rs['high_freq_factor'], rs['original_max_position_embeddings']
        lo_wl, hi_wl = old / lo, old / hi
        wl = 2 * math.pi / inv
        smooth = (old / wl - lo) / (hi - lo)
        scaled = torch.where(wl > lo_wl, inv / factor, inv)
        mid = ~(wl < hi_wl) & ~(wl > lo_wl)
        scaled = torch.where(mid, (1 - smooth) * inv / factor + smooth * inv, scaled)
        inv = scaled
    return inv


class Decoder(torch.nn.Module):
    def __init__(self, cfg, weights=None, seed=0):
        super().__init__()
        self.cfg = cfg
        d, V, f = cfg['hidden_size'], cfg['vocab_size'], cfg['intermediate_size']
        H, Hkv = cfg['num_attention_heads'], cfg['num_key_value_heads']
        hd = cfg['head_dim']
        qkv_bias = cfg.get('model_type') == 'qwen2' or cfg.get('attention_bias', False)
        g = torch.Generator().manual_seed(seed)
        shapes = {'model.embed_tokens.weight': (V, d), 'model.norm.weight': (d,)}
        for l in range(cfg['num_hidden_layers']):
            p = f'model.layers.{l}.'
            shapes.update({
                p + 'input_layernorm.weight': (d,), p + 'post_attention_layernorm.weight': (d,),
                p + 'self_attn.q_proj.weight': (H * hd, d), p + 'self_attn.k_proj.weight': (Hkv * hd, d),
                p + 'self_attn.v_proj.weight': (Hkv * hd, d), p + 'self_attn.o_proj.weight': (d, H * hd),
                p + 'mlp.gate_proj.weight': (f, d), p + 'mlp.up_proj.weight': (f, d), p + 'mlp.down_proj.weight': (d, f),
            })
            if qkv_bias:
                shapes.update({p + 'self_attn.q_proj.bias': (H * hd,), p + 'self_attn.k_proj.bias': (Hkv * hd,), p + 'self_attn.v_proj.bias': (Hkv * hd,)})
        if not cfg.get('tie_word_embeddings', False):
            shapes['lm_head.weight'] = (V, d)
        self.names = list(shapes)
        self.params = torch.nn.ParameterList()
        self.index = {}
        for name, shape in shapes.items():
            if weights is not None:
                t = weights[name].reshape(shape)
            elif name.endswith('norm.weight'):
                t = torch.ones(shape)
            elif name.endswith('.bias'):
                t = torch.zeros(shape)
            else:
                t = torch.randn(shape, generator=g) * 0.02
            self.index[name] = len(self.params)
            self.params.append(torch.nn.Parameter(t.clone()))
        self.register_buffer('inv_freq', inv_freq(cfg), persistent=False)

    def p(self, name):
        return self.params[self.index[name]] if name in self.index else None

    def linear(self, x, module):
        return F.linear(x, self.p(module + '.weight'), self.p(module + '.bias'))

    def rms(self, x, name):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.cfg['rms_norm_eps']) * self.p(name)

    def rope(self, x, cos, sin):
        h = x.shape[-1] // 2
        x1, x2 = x[..., :h], x[..., h:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    def forward(self, ids, cache=None, last_only=False):
        """ids [B,T]; cache: list of (k, v) per layer or None. Returns logits and the new cache."""
        cfg = self.cfg
        B, T = ids.shape
        H, Hkv, hd = cfg['num_attention_heads'], cfg['num_key_value_heads'], cfg['head_dim']
        P = 0 if cache is None else cache[0][0].shape[2]
        S = P + T
        pos = torch.arange(P, S, dtype=torch.float32)
        ang = pos[:, None] * self.inv_freq[None, :]
        cos, sin = ang.cos()[None, None], ang.sin()[None, None]
        causal = torch.arange(S)[None, :] <= torch.arange(P, S)[:, None]
        bias = torch.zeros(T, S).masked_fill(~causal, -1e9)
        h = self.p('model.embed_tokens.weight')[ids]
        new_cache = []
        for l in range(cfg['num_hidden_layers']):
            p = f'model.layers.{l}.'
            a = self.rms(h, p + 'input_layernorm.weight')
            q = self.linear(a, p + 'self_attn.q_proj').view(B, T, H, hd).transpose(1, 2)
            k = self.linear(a, p + 'self_attn.k_proj').view(B, T, Hkv, hd).transpose(1, 2)
            v = self.linear(a, p + 'self_attn.v_proj').view(B, T, Hkv, hd).transpose(1, 2)
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
            if cache is not None:
                k = torch.cat([cache[l][0], k], 2)
                v = torch.cat([cache[l][1], v], 2)
            new_cache.append((k, v))
            # Grouped-query attention as transformers' repeat_kv does it (query head h reads key/value head
            # h // (H / H_kv)); the tfjs decoder groups the queries instead, so the two formulations check each other.
            kr, vr = k.repeat_interleave(H // Hkv, dim=1), v.repeat_interleave(H // Hkv, dim=1)
            s = q @ kr.transpose(-1, -2) / math.sqrt(hd) + bias
            o = s.softmax(-1) @ vr
            h = h + self.linear(o.transpose(1, 2).reshape(B, T, H * hd), p + 'self_attn.o_proj')
            m = self.rms(h, p + 'post_attention_layernorm.weight')
            h = h + self.linear(F.silu(self.linear(m, p + 'mlp.gate_proj')) * self.linear(m, p + 'mlp.up_proj'), p + 'mlp.down_proj')
        h = self.rms(h, 'model.norm.weight')
        if last_only:
            h = h[:, -1:]
        head = self.p('lm_head.weight')
        if head is None:
            head = self.p('model.embed_tokens.weight')
        return h @ head.t(), new_cache


def blas_info():
    try:
        blas = os.path.realpath('/etc/alternatives/libblas.so.3-x86_64-linux-gnu')
    except OSError:
        blas = 'unknown'
    a = torch.randn(512, 512)
    b = torch.randn(512, 512)
    a @ b
    t = time.perf_counter()
    for _ in range(10):
        a @ b
    gflops = 10 * 2 * 512 ** 3 / (time.perf_counter() - t) / 1e9
    return {'blas': blas, 'torch_threads': torch.get_num_threads(), 'sgemm_512_gflops': round(gflops, 1),
            'torch': torch.__version__}


def bench(cfg):
    torch.manual_seed(0)
    model = Decoder(cfg, seed=0)
    B, T = cfg['bench_batch'], cfg['bench_seq']
    steps, warm = cfg['bench_steps'], cfg.get('bench_warmup', 1)
    V = cfg['vocab_size']
    ids = torch.randint(0, V, (B, T + 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.0)

    def step():
        logits, _ = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V), ids[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    for _ in range(warm):
        step()
    times, cpu = [], []
    for _ in range(steps):
        t, c = time.perf_counter(), time.process_time()
        step()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    train_s = min(times)

    gb, prompt_len, new = cfg['gen_batch'], cfg['gen_prompt'], cfg['gen_tokens']
    prompt = torch.randint(0, V, (gb, prompt_len))

    @torch.no_grad()
    def generate():
        logits, cache = model(prompt, last_only=True)
        tok = logits[:, -1].argmax(-1, keepdim=True)
        for _ in range(new - 1):
            logits, cache = model(tok, cache=cache, last_only=True)
            tok = logits[:, -1].argmax(-1, keepdim=True)

    generate()
    gen_times, gen_cpu = [], []
    for _ in range(cfg.get('gen_repeats', 3)):
        t, c = time.perf_counter(), time.process_time()
        generate()
        gen_times.append(time.perf_counter() - t)
        gen_cpu.append(time.process_time() - c)
    gen_s = min(gen_times)
    return {'train_tokens_per_s': B * T / train_s, 'train_tokens_per_s_mean': B * T * steps / sum(times), 'train_step_s': train_s,
            'gen_tokens_per_s': gb * new / gen_s, 'gen_tokens_per_s_mean': gb * new * len(gen_times) / sum(gen_times), 'gen_s': gen_s,
            'train_tokens_per_cpu_s': B * T / min(cpu), 'gen_tokens_per_cpu_s': gb * new / min(gen_cpu),
            'params': sum(p.numel() for p in model.parameters())}


def main():
    torch.set_num_threads(int(os.environ.get('TORCH_THREADS', '1')))
    if sys.argv[1] == 'logits':
        d = sys.argv[2]
        cfg = json.load(open(os.path.join(d, 'config.json')))
        cfg.setdefault('head_dim', cfg['hidden_size'] // cfg['num_attention_heads'])
        model = Decoder(cfg, weights=read_safetensors(os.path.join(d, 'model.safetensors')))
        ids = torch.tensor([json.loads(sys.argv[3])])
        with torch.no_grad():
            full, _ = model(ids)
            # The same sequence in two chunks through the cache, as a second check of the cache path.
            k = ids.shape[1] // 2
            a, cache = model(ids[:, :k])
            b, _ = model(ids[:, k:], cache=cache)
        print(json.dumps({'logits': full[0].tolist(), 'cached': torch.cat([a, b], 1)[0].tolist()}))
    elif sys.argv[1] == 'bench':
        cfg = json.loads(sys.argv[2])
        print(json.dumps({**bench(cfg), **blas_info()}))
    else:
        raise SystemExit(__doc__)


if __name__ == '__main__':
    main()
