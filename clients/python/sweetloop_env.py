"""A client for `sweetloop env serve`, Sweetloop's ColBench environment over HTTP (docs/env-service.md).

Standard library only (Python 3.8+): copy this one file next to a verl or TRL job, or put this folder on
PYTHONPATH. The service keeps each task's hidden reference; the client sees descriptions, the collaborator's
replies and scores.

    env = EnvClient("http://127.0.0.1:8100", token=os.environ.get("SWEETLOOP_ENV_TOKEN"))
    task = env.tasks(kind="backend", split="train")[0]
    ep = env.start(task["id"])                # ep["messages"]: system prompt and the task, for the policy
    r = env.step(ep["episode_id"], "What should it return for an empty list?")
    r = env.step(ep["episode_id"], "I WANT TO ANSWER: def f(xs): ...")
    r["done"], r["score"], r["tests_passed"]  # the sandboxed tests' verdict

As a command, it plays one episode from a script of agent messages and prints each step as a JSON line:

    python3 sweetloop_env.py --url URL --task-id ID --message "question" ... --answer-file answer.py
"""

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request


class EnvError(Exception):
    """The service refused a request: `status` is its HTTP status, `message` its reason."""

    def __init__(self, status, message, retry_after=None):
        super().__init__("HTTP %d: %s" % (status, message))
        self.status = status
        self.message = message
        self.retry_after = retry_after


class EnvClient:
    def __init__(self, url, token=None, timeout=300.0):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _call(self, method, path, body=None, query=None):
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
                return json.loads(raw) if raw else None
        except urllib.error.HTTPError as err:
            raw = err.read()
            try:
                message = json.loads(raw).get("error", raw.decode("utf-8", "replace"))
            except ValueError:
                message = raw.decode("utf-8", "replace")
            retry = err.headers.get("Retry-After")
            raise EnvError(err.code, message, float(retry) if retry else None) from None

    def health(self):
        return self._call("GET", "/health")

    def tasks(self, kind=None, split=None, limit=1000, offset=0):
        """Stored tasks: id, kind, split, source, external_id, description, tests (how many)."""
        return self._call("GET", "/v1/tasks", query={"kind": kind, "split": split, "limit": limit, "offset": offset})["tasks"]

    def start(self, task_id, collaborator=None, max_turns=None):
        """Opens an episode: episode_id, kind, collaborator, max_turns, messages (what the policy answers first)."""
        body = {"task_id": task_id}
        if collaborator is not None:
            body["collaborator"] = collaborator
        if max_turns is not None:
            body["max_turns"] = max_turns
        return self._call("POST", "/v1/episodes", body)

    def step(self, episode_id, message):
        """The agent's message. done false: reply (the collaborator's) and messages; done true: the score."""
        return self._call("POST", "/v1/episodes/%s/step" % urllib.parse.quote(episode_id), {"message": message})

    def close(self, episode_id):
        self._call("DELETE", "/v1/episodes/%s" % urllib.parse.quote(episode_id))

    def score(self, task_id, answer):
        """Scores an answer directly (no dialogue): score, success, tests_passed, tests_total, detail."""
        return self._call("POST", "/v1/score", {"task_id": task_id, "answer": answer})


def main(argv=None):
    p = argparse.ArgumentParser(description="Play one episode against `sweetloop env serve` from a script of agent messages.")
    p.add_argument("--url", required=True)
    p.add_argument("--task-id", required=True)
    p.add_argument("--collaborator")
    p.add_argument("--message", action="append", default=[], help="an agent message (repeat, in order)")
    p.add_argument("--answer-file", help="the answer's code: sent last, after 'I WANT TO ANSWER:'")
    a = p.parse_args(argv)
    env = EnvClient(a.url, token=os.environ.get("SWEETLOOP_ENV_TOKEN"))
    messages = list(a.message)
    if a.answer_file:
        with open(a.answer_file, encoding="utf-8") as f:
            messages.append("I WANT TO ANSWER:\n" + f.read())
    try:
        ep = env.start(a.task_id, collaborator=a.collaborator)
        print(json.dumps({"started": ep}), flush=True)
        for m in messages:
            r = env.step(ep["episode_id"], m)
            print(json.dumps({"step": r}), flush=True)
            if r["done"]:
                return 0
        env.close(ep["episode_id"])
        return 0
    except EnvError as err:
        print(json.dumps({"error": err.message, "status": err.status}), flush=True)
        return 3


if __name__ == "__main__":
    sys.exit(main())
