"""Counts the critic's preference pairs the official SWEET-RL pipeline forms from a Sweetloop sweet-rl export.

    python3 test/bot/export/official_pairs.py SWEET_RL_DIR EXPORT.jsonl K

SWEET_RL_DIR is a local checkout of facebookresearch/sweet_rl (nothing of it is copied here). Its
scripts/evaluate_code.py `main` is called as the pipeline calls it (`--k K --preference_path ...`) on a copy of
the export, and the pairs it writes are traced back to the export's lines: each pair is (chosen, rejected), the
last assistant entry's input + output of two trajectories, and the file's layout puts line i on task i % tasks.
Prints one JSON line: trajectories, k, tasks, pairs in all and per task (tasks in the export's block order, each
named by its first 60 characters), the rewards per task, and the best-of-k score the script reports.
"""

import contextlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import types


def load_evaluate_code(sweet_rl_dir):
    sys.path.insert(0, sweet_rl_dir)
    if importlib.util.find_spec("fire") is None:
        # The script only calls Fire under __main__ (its command line); main is called directly here.
        sys.modules["fire"] = types.SimpleNamespace(Fire=lambda component: None)
    path = os.path.join(sweet_rl_dir, "scripts", "evaluate_code.py")
    spec = importlib.util.spec_from_file_location("sweet_rl_evaluate_code", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(sweet_rl_dir, export_path, k):
    k = int(k)
    evaluate_code = load_evaluate_code(sweet_rl_dir)
    with open(export_path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    tasks = len(lines) // k
    last = [t["dialogue_history"][-1] for t in lines]
    owner = {}
    for i, entry in enumerate(last):
        owner.setdefault(entry["input"] + entry["output"], set()).add(i % tasks)
    work = tempfile.mkdtemp(prefix="official-pairs-")
    try:
        copy = os.path.join(work, "export.jsonl")
        shutil.copyfile(export_path, copy)
        pairs_path = os.path.join(work, "pairs.jsonl")
        report = []
        # The script prints its figures; they go to stderr so that stdout is this script's JSON line alone.
        with contextlib.redirect_stdout(sys.stderr):
            evaluate_code.main(saved_path=copy, k=k, preference_path=pairs_path)
        with open(pairs_path) as f:
            pairs = [json.loads(line) for line in f if line.strip()]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    per_task = [0] * tasks
    for p in pairs:
        chosen, rejected = owner.get(p["chosen"], set()), owner.get(p["rejected"], set())
        if len(chosen) != 1 or chosen != rejected:
            raise SystemExit(f"a pair does not trace back to one task of the export: {sorted(chosen)} vs {sorted(rejected)}")
        per_task[next(iter(chosen))] += 1
    rewards = [[lines[j * tasks + i]["reward"] for j in range(k)] for i in range(tasks)]
    best = [max(r) for r in rewards]
    print(json.dumps({
        "trajectories": len(lines),
        "k": k,
        "tasks": tasks,
        "pairs": len(pairs),
        "pairs_per_task": per_task,
        "task_names": [lines[i]["task"]["problem_description"][:60] for i in range(tasks)],
        "rewards_per_task": rewards,
        "best_of_k": sum(best) / len(best) if best else None,
    }))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
