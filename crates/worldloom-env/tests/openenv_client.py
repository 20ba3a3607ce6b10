"""Drives `worldloom serve-env` with the real `openenv-core` client.

Usage: openenv_client.py BASE_URL [MAX_SESSIONS]. GenericEnvClient (the
WebSocket session) resets and steps an episode, gets an error answer for a
malformed action and goes on; then the same over HTTP with `requests`, the
way `openenv-core`'s FastAPI server shapes /reset and /step. With
MAX_SESSIONS (the server's --max-sessions), that many clients hold sessions,
one more is refused with CAPACITY_REACHED, and once they close a new client
gets a session. Prints "openenv client: OK".
"""

import sys
import time

import requests
from openenv.core import GenericEnvClient
from websockets.exceptions import ConnectionClosed

base = sys.argv[1]

with GenericEnvClient(base_url=base).sync() as env:
    result = env.reset(domain="web", seed=5)
    obs = result.observation
    assert result.done is False, result
    assert obs["domain"] == "web", obs
    assert obs["goal"] == "Buy two stoneware mugs.", obs
    assert obs["text"].startswith("RootWebArea 'Mugs"), obs
    first = obs["text"]
    try:
        env.step({"action": "click('33'"})
        raise AssertionError("a malformed action was accepted")
    except RuntimeError as err:
        assert "VALIDATION_ERROR" in str(err), err
    result = env.step({"action": "fill('33', '2')"})
    assert result.done is False and result.reward == 0.0, result
    assert result.observation["text"] == first, result.observation
    assert result.observation["turn"] == 1
    state = env.state()
    assert state["step_count"] == 1, state
    result = env.step({"action": "send_msg_to_user('done')"})
    assert result.done is True, result
    assert result.observation["done_reason"] == "terminal_action"

health = requests.get(f"{base}/health", timeout=10).json()
assert health == {"status": "healthy"}, health
# A terminal task: its first state lives inside the first prompt, so the
# copy baseline has nothing to copy and refuses the step (the episode stays
# where it was); the terminal action then ends it.
reset = requests.post(f"{base}/reset", json={"domain": "terminal", "seed": 1}, timeout=10)
assert reset.status_code == 200, reset.text
episode = reset.json()["observation"]["episode_id"]
bad = requests.post(f"{base}/step", json={"action": {"action": ""}, "episode_id": episode}, timeout=10)
assert bad.status_code == 422, bad.text
refused = requests.post(f"{base}/step", json={"action": {"action": "ls -la ~/reports"}, "episode_id": episode}, timeout=10)
assert "copy baseline" in refused.text, refused.text
step = requests.post(f"{base}/step", json={"action": {"action": "exit"}, "episode_id": episode}, timeout=10)
assert step.status_code == 200, step.text
body = step.json()
assert set(body) == {"observation", "reward", "done"}, body
assert body["done"] is True, body

if len(sys.argv) > 2:
    held = [GenericEnvClient(base_url=base).sync() for _ in range(int(sys.argv[2]))]
    for client in held:
        client.connect()
        assert client.reset(seed=2).done is False
    extra = GenericEnvClient(base_url=base).sync()
    try:
        extra.reset(seed=2)
        raise AssertionError("a session beyond --max-sessions was accepted")
    except RuntimeError as err:  # the error answer came before the close
        assert "CAPACITY_REACHED" in str(err), err
    except ConnectionClosed as err:  # the close frame came first: its reason says why
        assert "at capacity" in str(err), err
    for client in held:
        client.close()
    deadline = time.time() + 10
    while True:
        try:
            with GenericEnvClient(base_url=base).sync() as again:
                assert again.reset(seed=2).done is False
            break
        except (RuntimeError, ConnectionClosed):
            assert time.time() < deadline, "no session came back after the others closed"
            time.sleep(0.05)

print("openenv client: OK")
