"""Golden fixture: runs the OFFICIAL SWEET-RL code on seeded inputs and writes inputs and outputs as numbers.

    /usr/bin/python3 test/trainer/golden/official.py /tmp/sweet_rl /tmp/collab_openrlhf [> test/trainer/golden/official.json]

The two arguments are local checkouts of facebookresearch/sweet_rl and YifeiZhou02/collab_openrlhf (git archive of
the mirrors, see test/trainer/golden/README.md); nothing of them is copied here. Needs torch and numpy (Debian's
python3-torch, python3-numpy), float64 throughout. The heavy modules the official files import at the top but the
functions run here do not use (deepspeed, vllm, transformers, datasets, flash_attn, ...) are stubbed in
sys.modules. Three stand-ins replace what a GPU run would have, each written to the behaviour of the real thing:
- the model: a bigram table (logits of the next token = one row of a [V, V] matrix, a parameter), as
  `model(ids, attention_mask=..., return_output=True)["logits"]`;
- the tokenizer: a word-level one over Llama 3.1's special tokens (specials, "\\n\\n", " word", " ");
- vLLM's engine (sample_best_of_n.py, rank_best_of_n.py): samples from / scores with the bigram tables; as in vLLM's
  V0 sampler (the vLLM of the fork's era), log-probabilities are taken after the temperature scaling, and a sample
  that stops on the end token carries that token's log-probability, not its text;
- DeepSpeed's engine in the accumulation case: each micro-batch's loss divided by the accumulation steps, then
  torch's clip_grad_norm_ (the same factor, max_norm / (norm + 1e-6)) and AdamW (FusedAdam's adam_w_mode).
"""
import importlib.abc
import importlib.machinery
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import types

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
SWEET, FORK = (os.path.abspath(p) for p in sys.argv[1:3])

# ---------------------------------------------------------------- stubs for imports the functions do not use
STUBBED = ('deepspeed', 'vllm', 'transformers', 'datasets', 'flash_attn', 'qwen_vl_utils', 'peft', 'fire', 'openai',
           'huggingface_hub', 'ray', 'wandb', 'bitsandbytes', 'optimum', 'selenium', 'gradio', 'tqdm', 'einops',
           'loralib', 'accelerate', 'torchmetrics', 'jsonlines', 'PIL', 'requests', 'bs4', 'tensorboard')


class _Any(types.ModuleType):
    """A module whose every attribute is a harmless class (usable as a base class, a decorator or a call)."""
    __path__ = []

    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        cls = type(name, (), {'__init__': lambda self, *a, **k: None, '__call__': lambda self, *a, **k: None})
        setattr(self, name, cls)
        return cls


class _Stubs(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] in STUBBED:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return _Any(spec.name)

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Stubs())
sys.modules['tqdm'] = types.ModuleType('tqdm')
sys.modules['tqdm'].tqdm = lambda it=None, **k: it if it is not None else types.SimpleNamespace(update=lambda *a: None)
OUT, sys.stdout = sys.stdout, sys.stderr  # the official scripts print; the fixture alone goes to stdout
sys.path[:0] = [SWEET, FORK, os.path.join(SWEET, 'scripts')]

# ---------------------------------------------------------------- tokenizer and models
SPECIALS = ['<|begin_of_text|>', '<|start_header_id|>', '<|end_header_id|>', '<|eot_id|>', '<pad>']
PATTERN = re.compile(r'<\|[a-z_]+\|>|<pad>|\n\n| ?[^\s<]+|\s')
V = 64


class WordTokenizer:
    """Llama-3.1-like special tokens, one token a word (with its leading space); ids in first-seen order."""
    eos_token = '<|eot_id|>'

    def __init__(self):
        self.vocab = {}
        for t in SPECIALS + ['\n\n', ' ', 'system', 'user', 'assistant'] + [f' w{i}' for i in range(24)]:
            self.id(t)
        self.eos_token_id = self.vocab[self.eos_token]
        self.pad_token_id = self.vocab['<pad>']

    def id(self, tok):
        if tok not in self.vocab:
            if len(self.vocab) >= V:
                raise RuntimeError(f'vocabulary over {V} tokens at {tok!r}')
            self.vocab[tok] = len(self.vocab)
        return self.vocab[tok]

    def tokens(self, text):
        toks = PATTERN.findall(text)
        assert ''.join(toks) == text, text
        return toks

    def encode(self, text):
        return [self.id(t) for t in self.tokens(text)]

    def __call__(self, text, max_length=None, truncation=False, return_tensors=None, add_special_tokens=False, padding=False):
        ids = self.encode(text)
        if truncation and max_length is not None:
            ids = ids[:max_length]  # Hugging Face's default truncation_side is 'right'
        t = torch.tensor([ids], dtype=torch.long)
        return {'input_ids': t, 'attention_mask': torch.ones_like(t)}

    def decode_one(self, i):
        return next(k for k, v in self.vocab.items() if v == i)


TOK = WordTokenizer()
WORDS = [TOK.vocab[f' w{i}'] for i in range(24)]
gen = torch.Generator().manual_seed(20261205)


def table(scale=1.5):
    w = torch.randn(V, V, generator=gen) * scale
    w[:, TOK.eos_token_id] += 1.0  # samples end after a handful of words
    return w


W_POLICY = table()   # the model being trained (actor / critic), its weights at the start
W_REF = W_POLICY + 0.4 * torch.randn(V, V, generator=gen)  # the frozen reference (a different table, so log-ratios are not 0)
W_CRITIC = table()   # the trained critic that ranks candidates


class Bigram(torch.nn.Module):
    def __init__(self, w, trainable):
        super().__init__()
        self.w = torch.nn.Parameter(w.clone(), requires_grad=trainable)

    def forward(self, ids, attention_mask=None, return_output=True):
        return {'logits': self.w[ids]}


def chat(system, turns, generation=True):
    """Llama 3.1's chat template (what the official simulate_interactions.py feeds vLLM)."""
    s = f'<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n{system}<|eot_id|>'
    for role, text in turns:
        s += f'<|start_header_id|>{role}<|end_header_id|>\n\n{text}<|eot_id|>'
    if generation:
        s += '<|start_header_id|>assistant<|end_header_id|>\n\n'
    return s


def words(n):
    return ''.join(f' w{int(i)}' for i in torch.randint(0, 24, (n,), generator=gen))


def trajectory(turns):
    """A dialogue as the official data holds it: dialogue_history entries with the formatted input and the output."""
    history, done = [], []
    for t in range(turns):
        agent = words(int(torch.randint(2, 6, (1,), generator=gen)))
        history.append({'role': 'assistant', 'input': chat(' w0 w1', done), 'output': agent})
        done = done + [('assistant', agent), ('user', words(int(torch.randint(2, 5, (1,), generator=gen))))]
    return history


out = {'commits': {}, 'vocabSize': V}
for name, path in (('sweet_rl', SWEET), ('collab_openrlhf', FORK)):
    try:
        out['commits'][name] = subprocess.run(['git', '-C', path, 'rev-parse', 'HEAD'], capture_output=True, text=True, check=True).stdout.strip()
    except Exception:  # a `git archive` checkout has no .git: the commit is the archive's, given by the caller
        out['commits'][name] = os.environ.get(f'{name.upper()}_COMMIT', 'unknown')

from openrlhf.datasets.reward_dataset import RewardDataset  # noqa: E402
from openrlhf.models.loss import DPOLoss, GPTLMLoss  # noqa: E402
from openrlhf.trainer.dpo_trainer import DPOTrainer  # noqa: E402


def dataset(response_template, max_length=4096):
    """RewardDataset.__getitem__ as train_dpo.py builds it (is_dpo, no prompt key), without the datasets library."""
    d = RewardDataset.__new__(RewardDataset)
    d.tokenizer, d.max_length, d.response_template = TOK, max_length, response_template
    d.is_dpo, d.eos_token = True, TOK.eos_token
    return d


def item(d, chosen, rejected):
    d.prompts, d.chosens, d.rejects, d.extras = [''], [chosen], [rejected], [0]
    return d[0]


def trainer(mean_log_prob):
    t = DPOTrainer.__new__(DPOTrainer)
    t.mean_log_prob, t.tokenizer = mean_log_prob, TOK
    return t


def forward_pair(t, model, it):
    cid, cm, rid, rm, clm, rlm, extra = it
    return t.concatenated_forward(model, cid, cm, rid, rm, clm, rlm, torch.tensor([extra]))


def seq_record(it):
    cid, _, rid, _, clm, rlm, _ = it
    return {'chosen': {'ids': cid[0].tolist(), 'mask': clm[0].tolist()}, 'rejected': {'ids': rid[0].tolist(), 'mask': rlm[0].tolist()}}


def dpo_case(items, mean_log_prob, beta, nll_coef):
    """Per pair (micro-batch of 1, as the README's commands): the official loss terms and the gradient of the total."""
    t, cases = trainer(mean_log_prob), []
    for it in items:
        policy, ref = Bigram(W_POLICY, True), Bigram(W_REF, False)
        c, r, _, nll = forward_pair(t, policy, it)
        with torch.no_grad():
            rc, rr, _, _ = forward_pair(t, ref, it)
        pref, _, _ = DPOLoss(beta)(c, r, rc, rr)
        total = pref + nll * nll_coef
        total.backward()
        case = {**seq_record(it), 'preference': pref.item(), 'nll': nll.item(), 'total': total.item()}
        if len(cases) < 3:  # gradients of the first three pairs (the fixture stays small)
            case['grad'] = policy.w.grad.flatten().tolist()
        cases.append(case)
    return cases


out['weights'] = {'policy': W_POLICY.flatten().tolist(), 'reference': W_REF.flatten().tolist(), 'critic': W_CRITIC.flatten().tolist()}
out['tokens'] = {'eos': TOK.eos_token_id, 'pad': TOK.pad_token_id}
TEMPLATE = '<|start_header_id|>assistant<|end_header_id|>'

# ---------------------------------------------------------------- critic: Bradley-Terry over trajectory pairs
# evaluate_code.py --ground_truth_preference_path writes "In light that the final answer is: {gt}." + last input + output;
# train_dpo --mean_log_prob --response_template masks every assistant turn up to its end token.
crit_items = []
for p in range(8):
    gt = words(3)
    a, b = trajectory(int(torch.randint(1, 4, (1,), generator=gen))), trajectory(int(torch.randint(1, 4, (1,), generator=gen)))
    crit_items.append(item(dataset(TEMPLATE), f'In light that the final answer is:{gt}.' + a[-1]['input'] + a[-1]['output'],
                           f'In light that the final answer is:{gt}.' + b[-1]['input'] + b[-1]['output']))
out['critic'] = {'beta': 0.1, 'pairs': dpo_case(crit_items, True, 0.1, 0.0)}

# ---------------------------------------------------------------- multi-turn DPO: whole dialogues, sums over assistant turns
mt_items = []
for p in range(8):
    a, b = trajectory(int(torch.randint(1, 4, (1,), generator=gen))), trajectory(int(torch.randint(1, 4, (1,), generator=gen)))
    mt_items.append(item(dataset(TEMPLATE), a[-1]['input'] + a[-1]['output'], b[-1]['input'] + b[-1]['output']))
out['mtdpo'] = {'beta': 0.1, 'nll': 0.01, 'pairs': dpo_case(mt_items, False, 0.1, 0.01)}

# ---------------------------------------------------------------- actor: step-level pairs written with --no_prompt
actor_items, actor_prompts = [], []
for p in range(8):
    state = trajectory(int(torch.randint(1, 4, (1,), generator=gen)))[-1]['input']
    ca, cb = words(int(torch.randint(2, 6, (1,), generator=gen))), words(int(torch.randint(2, 6, (1,), generator=gen)))
    actor_items.append(item(dataset(None), state + ca + TOK.eos_token, state + cb + TOK.eos_token))
    actor_prompts.append(len(TOK.encode(state)))
out['actor'] = {'beta': 0.1, 'nll': 0.01, 'pairs': dpo_case(actor_items, False, 0.1, 0.01)}
for case, n in zip(out['actor']['pairs'], actor_prompts):
    case['promptLength'] = n

# ---------------------------------------------------------------- one update over 8 pairs: DeepSpeed's accumulation
def accumulated_update(items, mean_log_prob, beta, nll_coef, lr):
    t, policy, ref = trainer(mean_log_prob), Bigram(W_POLICY, True), Bigram(W_REF, False)
    opt = torch.optim.AdamW(policy.parameters(), lr=lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
    for it in items:  # train_batch_size 8, micro_train_batch_size 1: 8 accumulation steps
        c, r, _, nll = forward_pair(t, policy, it)
        with torch.no_grad():
            rc, rr, _, _ = forward_pair(t, ref, it)
        pref, _, _ = DPOLoss(beta)(c, r, rc, rr)
        ((pref + nll * nll_coef) / len(items)).backward()
    norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
    opt.step()
    return {'lr': lr, 'gradNorm': norm.item(), 'weights': policy.w.detach().flatten().tolist()}


out['accumulation'] = {'mtdpo': accumulated_update(mt_items, False, 0.1, 0.01, 1e-2), 'critic': accumulated_update(crit_items, True, 0.1, 0.0, 1e-2)}

# ---------------------------------------------------------------- rejection fine-tuning: GPTLMLoss, micro-batch 1, accumulated
def rft_update(items):
    policy, loss_fn = Bigram(W_POLICY, True), GPTLMLoss()
    seqs = []
    for it in items:
        ids, _, _, _, mask, _, _ = it
        labels = torch.where(mask.bool(), ids, torch.tensor(loss_fn.IGNORE_INDEX))
        loss = loss_fn(policy(ids)['logits'], labels)
        (loss / len(items)).backward()
        seqs.append({'ids': ids[0].tolist(), 'mask': mask[0].tolist(), 'loss': loss.item()})
    return {'sequences': seqs, 'grad': policy.w.grad.flatten().tolist()}


out['rft'] = rft_update(mt_items)

# ---------------------------------------------------------------- pairs from k-blocks: evaluate_code.py
import evaluate_code  # noqa: E402

K, TASKS = 4, 12
rewards = torch.randint(0, 5, (K, TASKS), generator=gen).double() / 4  # 0, .25, .5, .75, 1: ties and tasks without a success
trajs = []
for j in range(K):
    for i in range(TASKS):
        trajs.append({'task': {'problem_description': f'task {i}', 'ground_truth': 'gt'}, 'reward': rewards[j, i].item(),
                      'dialogue_history': [{'input': f'<{j},{i}>', 'output': ''}]})
with tempfile.TemporaryDirectory() as tmp:
    src, dst = os.path.join(tmp, 'traj.jsonl'), os.path.join(tmp, 'pairs.jsonl')
    with open(src, 'w') as f:
        f.write(''.join(json.dumps(t) + '\n' for t in trajs))
    evaluate_code.main(src, k=K, preference_path=dst)
    with open(dst) as f:
        official = [json.loads(line) for line in f]
parse = lambda s: [int(x) for x in s.strip('<>').split(',')]  # noqa: E731
out['trajectoryPairs'] = {'k': K, 'tasks': TASKS, 'rewards': rewards.tolist(),
                          'pairs': [{'chosen': parse(p['chosen']), 'rejected': parse(p['rejected'])} for p in official]}

# ---------------------------------------------------------------- ranking: sample_best_of_n.py then rank_best_of_n.py
class Logprob:
    def __init__(self, logprob, decoded_token):
        self.logprob, self.decoded_token = logprob, decoded_token


class SamplingParams:
    def __init__(self, temperature=1.0, n=1, max_tokens=16, logprobs=None, prompt_logprobs=None, **_):
        self.temperature, self.n, self.max_tokens, self.prompt_logprobs = temperature, n, max_tokens, prompt_logprobs


class FakeLLM:
    """vLLM's LLM over a bigram table; which table: the policy for sampling, the critic for ranking."""
    weights = None

    def __init__(self, **_):
        pass

    def logprobs(self, prev, temperature):
        return torch.log_softmax(self.weights[prev] / temperature, -1)

    def generate(self, prompts, params, use_tqdm=True):
        res = []
        for prompt in prompts:
            ids = TOK.encode(prompt)
            if params.prompt_logprobs is not None:  # scoring: log-probabilities of the prompt's own tokens
                lps = [None] + [{ids[t]: Logprob(self.logprobs(ids[t - 1], params.temperature)[ids[t]].item(), TOK.decode_one(ids[t]))}
                                for t in range(1, len(ids))]
                res.append(types.SimpleNamespace(prompt_logprobs=lps, outputs=[]))
                continue
            outs = []
            allowed = torch.full((V,), -math.inf)
            allowed[WORDS + [TOK.eos_token_id]] = 0.0
            for _ in range(params.n):
                prev, toks, lps = ids[-1], [], []
                while len(toks) < params.max_tokens:
                    lp = self.logprobs(prev, params.temperature)
                    nxt = int(torch.multinomial(torch.exp(lp + allowed), 1, generator=gen))
                    lps.append({nxt: Logprob(lp[nxt].item(), TOK.decode_one(nxt))})
                    if nxt == TOK.eos_token_id:
                        break
                    toks.append(nxt)
                    prev = nxt
                outs.append(types.SimpleNamespace(text=''.join(TOK.decode_one(t) for t in toks), logprobs=lps))
            res.append(types.SimpleNamespace(outputs=outs))
        return res


vllm = sys.modules['vllm'] = types.ModuleType('vllm')
vllm.LLM, vllm.SamplingParams = FakeLLM, SamplingParams
sys.modules['transformers'].AutoTokenizer = types.SimpleNamespace(from_pretrained=lambda *a, **k: TOK)
for m in ('sample_best_of_n', 'rank_best_of_n', 'generate_random_pairs_from_ranks'):
    sys.modules.pop(m, None)
import sample_best_of_n  # noqa: E402
import rank_best_of_n  # noqa: E402

rank_data = [{'task': {'ground_truth': words(3)}, 'reward': 0.5, 'dialogue_history': trajectory(int(torch.randint(1, 3, (1,), generator=gen)))} for _ in range(2)]
with tempfile.TemporaryDirectory() as tmp:
    src, sampled, ranked = (os.path.join(tmp, n) for n in ('data.jsonl', 'sampled.jsonl', 'ranked.jsonl'))
    with open(src, 'w') as f:
        f.write(''.join(json.dumps(d) + '\n' for d in rank_data))
    FakeLLM.weights = W_POLICY
    sample_best_of_n.main(src, sampled, agent_model='policy', temperature=1.0, best_of_n=16, data_fraction=1.0)
    FakeLLM.weights = W_CRITIC
    rank_best_of_n.main(input_path=sampled, output_path=ranked, model_id='critic')
    with open(ranked) as f:
        ranked_rows = [json.loads(line) for line in f]
states = []
for d in ranked_rows:
    prefix = f'In light that the final answer is: {d["ground_truth"]}.'
    cands = []
    for o, sampler_mean in zip(d['additional_outputs'], d['additional_reference_logprobs']):
        cands.append({'ids': TOK.encode(o), 'samplerMean': sampler_mean})
    states.append({'prompt': TOK.encode(prefix + d['input']), 'policyPrompt': TOK.encode(d['input']),
                   'header': TOK.encode('<|start_header_id|>assistant<|end_header_id|>\n\n'), 'candidates': cands, 'judge': d['judge_result']})
out['ranking'] = {'temperature': 0.5, 'samplingTemperature': 1.0, 'states': states}

# ---------------------------------------------------------------- actor pairs from ranks: generate_random_pairs_from_ranks.py
import generate_random_pairs_from_ranks as grp  # noqa: E402

judge = [torch.randn(16, generator=gen).tolist() for _ in range(6)]
judge.append([0.5] * 8 + torch.randn(8, generator=gen).tolist())  # a state with ties: pairs the official code still emits
with tempfile.TemporaryDirectory() as tmp:
    src, dst = os.path.join(tmp, 'ranked.jsonl'), os.path.join(tmp, 'pairs.jsonl')
    with open(src, 'w') as f:
        for s, j in enumerate(judge):
            f.write(json.dumps({'input': f'<s{s}>', 'judge_result': j, 'additional_outputs': [f'<s{s}c{c}>' for c in range(16)]}) + '\n')
    grp.main(src, dst, no_prompt=False, num_pairs=4)
    with open(dst) as f:
        rows = [json.loads(line) for line in f]
cand = lambda s: [int(x) for x in re.findall(r'\d+', s)]  # noqa: E731
out['rankPairs'] = {'numPairs': 4, 'judge': judge, 'pairs': [{'state': cand(r['prompt'])[0], 'chosen': cand(r['chosen'])[1], 'rejected': cand(r['rejected'])[1]} for r in rows]}

# ---------------------------------------------------------------- AdamW, clipping and the schedule over 40 updates
try:
    from transformers.optimization import get_scheduler as _real_get_scheduler  # the fork pins transformers 4.46.3
    if not callable(_real_get_scheduler) or isinstance(sys.modules['transformers'], _Any):
        raise ImportError
except ImportError:
    _real_get_scheduler = None


def cosine_with_min_lr(opt, warmup, total, min_lr_rate):
    """transformers 4.46.3 optimization.py, get_cosine_with_min_lr_schedule_with_warmup (num_cycles 0.5), when
    transformers is not installed: its lr_lambda, step for step."""
    def f(step):
        if step < warmup:
            return float(step) / float(max(1, warmup))
        progress = float(step - warmup) / float(max(1, total - warmup))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * 0.5 * 2.0 * progress)) * (1 - min_lr_rate) + min_lr_rate)
    return torch.optim.lr_scheduler.LambdaLR(opt, f)


STEPS, PEAK = 40, 1e-2
param = torch.nn.Parameter(torch.randn(32, generator=gen))
init = param.detach().clone()
grads = [torch.randn(32, generator=gen) * (0.3 if s % 3 else 3.0) for s in range(STEPS)]  # every third above the clip
opt = torch.optim.AdamW([param], lr=PEAK, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
warmup = math.ceil(STEPS * 0.03)  # train_dpo.py: num_warmup_steps = ceil(max_steps * lr_warmup_ratio)
if _real_get_scheduler is not None:
    sched = _real_get_scheduler('cosine_with_min_lr', opt, num_warmup_steps=warmup, num_training_steps=STEPS, scheduler_specific_kwargs={'min_lr': PEAK * 0.1})
else:
    sched = cosine_with_min_lr(opt, warmup, STEPS, 0.1)
lrs, norms, trace = [], [], []
for s in range(STEPS):
    lrs.append(opt.param_groups[0]['lr'])
    param.grad = grads[s].clone()
    norms.append(torch.nn.utils.clip_grad_norm_([param], 1.0).item())
    opt.step()
    sched.step()
    trace.append(param.detach().clone().tolist())
out['optimizer'] = {'steps': STEPS, 'peakLr': PEAK, 'warmupRatio': 0.03, 'minLrRatio': 0.1, 'betas': [0.9, 0.95], 'eps': 1e-8, 'maxGradNorm': 1.0,
                    'scheduler': 'transformers' if _real_get_scheduler else 'transformers-4.46.3-formula',
                    'init': init.tolist(), 'grads': [g.tolist() for g in grads], 'lrs': lrs, 'gradNorms': norms, 'params': trace}

json.dump(out, OUT, separators=(',', ':'))
OUT.write('\n')
