"""Redis backend: plain commands and Lua scripts, each operation atomic on the server.

Everything goes through one redis-py client and its connection pool (``client_options``): the
scripts are ``Script`` objects (``register_script``: EVALSHA, and the script loaded again when
the server forgot it), several commands that go together a pipeline. The pool hands each thread
a connection of its own for the length of a command, checks on the way out that the server has
not closed it (a Redis restart, an idle timeout: then it opens a new one), and, being made in
this process, is replaced in a forked child (redis-py compares the pid). The client's retry
policy sends a command once more when its connection broke (``ConnectionError``), never when
its answer timed out: a slow server may have run it, and an increment sent twice counts twice.
So a timed-out command's outcome is unknown: callers see ``StateOutcomeUnknownError`` (a
``StateUnavailableError``), and ``StateUnavailableError`` for a connection that failed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import (
    MasterDownError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisError,
    ResponseError,
)
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from telegram_bot.errors import StateError, StateOutcomeUnknownError, StateUnavailableError
from telegram_bot.numbers import ascii_int
from telegram_bot.state.base import (
    FINAL_TEXTS,
    InvalidValueError,
    KVStore,
    MemoryStatus,
    RawFinish,
    RawOp,
    compact_json_encoder,
    prefix_successor,
)
from telegram_bot.state.keys import INDEXED_FAMILIES, PACK

# Packed keys (``<group>#<field>``, ``keys.PACK``): the group is one hash, ``<group>#`` its
# name and ``<field>`` its field; every script reads and writes keys through these functions, so
# a packed key takes every operation a plain one does. A group lives as long as its
# longest-lived field: a field written with a TTL extends the hash to at least that TTL, one
# written without a TTL makes it permanent.
_KEYS = """
local function group(key)
  return string.match(key, '^(.*#)(.*)$')
end
local function set_px(key, value, ttl)
  if ttl == '' then redis.call('SET', key, value)
  else redis.call('SET', key, value, 'PX', ttl) end
end
local function group_ttl(h, existed, ttl)
  if ttl == '' then redis.call('PERSIST', h) return end
  if not existed then redis.call('PEXPIRE', h, ttl) return end
  local left = redis.call('PTTL', h)
  if left >= 0 and left < tonumber(ttl) then redis.call('PEXPIRE', h, ttl) end
end
local function kget(key)
  local h, f = group(key)
  if h then return redis.call('HGET', h, f) end
  return redis.call('GET', key)
end
local function kexists(key)
  local h, f = group(key)
  if h then return redis.call('HEXISTS', h, f) == 1 end
  return redis.call('EXISTS', key) == 1
end
local function kset(key, value, ttl)
  local h, f = group(key)
  if not h then return set_px(key, value, ttl) end
  local existed = redis.call('EXISTS', h) == 1
  redis.call('HSET', h, f, value)
  group_ttl(h, existed, ttl)
end
local function kdel(key)
  local h, f = group(key)
  if h then redis.call('HDEL', h, f) else redis.call('DEL', key) end
end
-- An increment of a key that holds an integer (its TTL stays).
local function kadd(key, step)
  local h, f = group(key)
  if h then return redis.call('HINCRBY', h, f, step) end
  return redis.call('INCRBY', key, step)
end
-- An increment whose TTL applies when it creates the key.
local function kincr(key, step, ttl)
  if kexists(key) then return kadd(key, step) end
  kset(key, step, ttl)
  return tonumber(step)
end
"""
_GET_MANY = (
    _KEYS
    + """
local values = {}
for i = 1, #KEYS do values[i] = kget(KEYS[i]) end
return values
"""
)
# set (ARGV: value, TTL or ''), or set only if absent (ARGV[3] == 'nx'), for a packed key.
_SET = (
    _KEYS
    + """
if ARGV[3] == 'nx' and kexists(KEYS[1]) then return 0 end
kset(KEYS[1], ARGV[1], ARGV[2])
return 1
"""
)
# compare_and_set with an expected value: the GET and the SET run as one step on the server.
_REPLACE_IF_EQUAL = (
    _KEYS
    + """
if kget(KEYS[1]) ~= ARGV[1] then return 0 end
kset(KEYS[1], ARGV[2], ARGV[3])
return 1
"""
)
# delete_if_equal: a GET and a DEL, nothing that takes memory (a full Redis runs it).
_DELETE_IF_EQUAL = (
    _KEYS
    + """
if kget(KEYS[1]) ~= ARGV[1] then return 0 end
kdel(KEYS[1])
return 1
"""
)
# The TTL applies only when this increment creates the key.
_INCREMENT = (
    _KEYS
    + """
return kincr(KEYS[1], ARGV[1], ARGV[2])
"""
)
# set_if_absent_and_increment: KEYS: the key, the key that must be absent too (the key again
# when there is none), then one per increment; ARGV: the value, its TTL or '', then per
# increment its step and its TTL or ''. Every target is checked before anything is written; the
# new values are returned in order (nil: the key held a value).
_SET_IF_ABSENT_AND_INCREMENT = (
    _KEYS
    + """
if kexists(KEYS[1]) or kexists(KEYS[2]) then return false end
for i = 3, #KEYS do
  local current = kget(KEYS[i])
  if current and not string.match(current, '^-?%d+$') then
    return redis.error_reply('not an integer: ' .. KEYS[i])
  end
end
set_px(KEYS[1], ARGV[1], ARGV[2])
local values = {}
for i = 3, #KEYS do
  values[i - 2] = kincr(KEYS[i], ARGV[2 * i - 3], ARGV[2 * i - 2])
end
return values
"""
)
# The writes of apply_once and claim_or_finish: a SET with its TTL in ms ('' for none), and the
# ops (a JSON list of [kind, arg, ttl]) whose keys start at KEYS[first]. ``known`` says which
# keys hold a value, from the GETs that checked the increments' targets first: an increment of
# a key that holds none is a SET of the step with its TTL (INCRBY and PEXPIRE would write the
# same), one of a key that holds one an INCRBY alone (its TTL stays). Each write marks its key.
_WRITE_OPS = (
    _KEYS
    + """
local function add(known, key, step, ttl)
  if known[key] then return kadd(key, step) end
  kset(key, step, ttl)
  known[key] = true
  return tonumber(step)
end
local function check_integer(known, key)
  local current = kget(key)
  if current and not string.match(current, '^-?%d+$') then
    return redis.error_reply('not an integer: ' .. key)
  end
  known[key] = current ~= false
end
local function apply_ops(known, ops, first)
  for i, op in ipairs(ops) do
    local key, kind, arg, ttl = KEYS[first + i - 1], op[1], op[2], op[3]
    if kind == 'i' then add(known, key, arg, ttl)
    else
      kset(key, arg, ttl)
      known[key] = true
    end
  end
end
"""
)
# apply_once: check every increment target first (a script that fails half-way keeps its
# earlier writes), then apply the ops and the marker. KEYS: marker, then one key per op. ARGV:
# marker value, marker TTL, then the ops as one JSON list of [kind, arg, ttl] in KEYS order
# (one argument instead of three per op: packing the command's arguments was the larger part
# of a group message's Redis cost on the client).
_APPLY_ONCE = (
    _WRITE_OPS
    + """
if kget(KEYS[1]) == ARGV[1] then return 0 end
local ops = cjson.decode(ARGV[3])
local known = {}
for i, op in ipairs(ops) do
  if op[1] == 'i' then
    local refused = check_integer(known, KEYS[i + 1])
    if refused then return refused end
  end
end
apply_ops(known, ops, 2)
kset(KEYS[1], ARGV[1], ARGV[2])
return 1
"""
)
# claim_or_finish: KEYS: the key, the marker (the key again when there is none), the done key
# (the key again when it is the key), one per increment, one per op. ARGV: the claim and its
# TTL, the done value and its TTL, the marker ('0' none, '1' checked and written, '2' checked
# only), the increments as one JSON list of [step, ttl, trigger], the ops as apply_once's.
# Answers nil (nothing written), or {1 finished / 0 claimed, the increments' new values...}.
_CLAIM_OR_FINISH = (
    _WRITE_OPS
    + """
if kexists(KEYS[1]) or kexists(KEYS[3]) then return false end
if ARGV[5] ~= '0' and kget(KEYS[2]) == ARGV[3] then return false end
local increments = cjson.decode(ARGV[6])
local ops = cjson.decode(ARGV[7])
local n = #increments
local known = {}
for i = 1, n + #ops do
  if i <= n or ops[i - n][1] == 'i' then
    local refused = check_integer(known, KEYS[i + 3])
    if refused then return refused end
  end
end
local answer = {1}
for i, inc in ipairs(increments) do
  local value = add(known, KEYS[i + 3], inc[1], inc[2])
  if inc[3] ~= '' and value == tonumber(inc[3]) then answer[1] = 0 end
  answer[i + 1] = value
end
if answer[1] == 0 then
  set_px(KEYS[1], ARGV[1], ARGV[2])
  return answer
end
apply_ops(known, ops, n + 4)
if ARGV[5] == '1' then kset(KEYS[2], ARGV[3], ARGV[4]) end
kset(KEYS[3], ARGV[3], ARGV[4])
return answer
"""
)
# The keys of an indexed family (keys.INDEXED_FAMILIES) are listed from two sorted sets beside
# them, so that a page never walks the keyspace: ``#index:<family>`` holds every key at score 0
# (ZRANGEBYLEX gives key order, as on the other backends) and ``#expiry:<family>`` holds the keys
# that have a TTL, scored by their expiry time. Neither name can be a KV key (no family starts
# with '#'). Every write of such a key goes through _INDEXED_WRITE, so the key and its entries
# change together; a key that expires leaves its entries behind until the next write or scan
# of the family drops them (entries whose expiry passed, at most 200 per call; the scan also
# drops any entry whose key it finds gone).
_DROP_EXPIRED = """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function drop_expired(index, expiry, now)
  local gone = redis.call('ZRANGEBYSCORE', expiry, '-inf', '(' .. now, 'LIMIT', 0, 200)
  for i = 1, #gone do
    redis.call('ZREM', index, gone[i])
    redis.call('ZREM', expiry, gone[i])
  end
end
"""
# KEYS: the key, its family's index, its family's expiry set. ARGV: mode ('set', 'nx': only if
# absent, 'eq': only if it holds ARGV[4], 'del', 'deleq': delete only if it holds ARGV[4]), the
# value, the TTL in ms or ''.
_INDEXED_WRITE = (
    _DROP_EXPIRED
    + """
local now = now_ms()
drop_expired(KEYS[2], KEYS[3], now)
local mode = ARGV[1]
if mode == 'del' or mode == 'deleq' then
  if mode == 'deleq' and redis.call('GET', KEYS[1]) ~= ARGV[4] then return 0 end
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], KEYS[1])
  redis.call('ZREM', KEYS[3], KEYS[1])
  return 1
end
if mode ~= 'set' then
  local current = redis.call('GET', KEYS[1])
  if mode == 'nx' and current then return 0 end
  if mode == 'eq' and current ~= ARGV[4] then return 0 end
end
if ARGV[3] == '' then
  redis.call('SET', KEYS[1], ARGV[2])
  redis.call('ZREM', KEYS[3], KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), KEYS[1])
end
redis.call('ZADD', KEYS[2], 0, KEYS[1])
return 1
"""
)
# KEYS: the family's index and expiry set. ARGV: the ZRANGEBYLEX bounds, the page size. The keys
# the entries name are read with EXISTS (not declared in KEYS: a single Redis, not a cluster).
_INDEXED_SCAN = (
    _DROP_EXPIRED
    + """
drop_expired(KEYS[1], KEYS[2], now_ms())
local page, low, limit = {}, ARGV[1], tonumber(ARGV[3])
while #page < limit do
  local batch = redis.call('ZRANGEBYLEX', KEYS[1], low, ARGV[2], 'LIMIT', 0, limit - #page)
  if #batch == 0 then break end
  for i = 1, #batch do
    if redis.call('EXISTS', batch[i]) == 1 then
      page[#page + 1] = batch[i]
    else
      redis.call('ZREM', KEYS[1], batch[i])
      redis.call('ZREM', KEYS[2], batch[i])
    end
  end
  low = '(' .. batch[#batch]
end
return page
"""
)
# move_key: KEYS: the key of the unscoped format, its scoped name, and for an indexed family its
# index and expiry set. ARGV: '1' when indexed, then the final markers' texts (a merge keeps
# them). A RENAME when the scoped key is absent; else a merge, field by field for a group of
# packed keys (a hash): integers added (INCRBY keeps the TTL), a final marker kept over any
# other value, else the scoped value; the longer TTL, none the longest.
_MOVE = (
    _DROP_EXPIRED
    + """
local old, new = KEYS[1], KEYS[2]
local kind = redis.call('TYPE', old)['ok']
if kind == 'none' then return 0 end
if kind ~= 'string' and kind ~= 'hash' then
  return redis.error_reply('not a KV key (a ' .. kind .. '): ' .. old)
end
local function is_int(v) return v and string.match(v, '^-?%d+$') ~= nil end
local function final(v) return v == ARGV[2] or v == ARGV[3] end
local answer = 1
if redis.call('EXISTS', new) == 0 then
  redis.call('RENAME', old, new)
else
  answer = 2
  local t_old, t_new = redis.call('PTTL', old), redis.call('PTTL', new)
  if kind == 'hash' then
    local fields = redis.call('HGETALL', old)
    for i = 1, #fields, 2 do
      local f, a = fields[i], fields[i + 1]
      local b = redis.call('HGET', new, f)
      if not b then redis.call('HSET', new, f, a)
      elseif is_int(a) and is_int(b) then redis.call('HINCRBY', new, f, a)
      elseif final(a) and not final(b) then redis.call('HSET', new, f, a) end
    end
  else
    local a, b = redis.call('GET', old), redis.call('GET', new)
    if is_int(a) and is_int(b) then redis.call('INCRBY', new, a)
    elseif final(a) and not final(b) then redis.call('SET', new, a, 'KEEPTTL') end
  end
  if t_old == -1 or t_new == -1 then redis.call('PERSIST', new)
  elseif t_old > t_new then redis.call('PEXPIRE', new, t_old) end
  redis.call('DEL', old)
end
if ARGV[1] == '1' then
  local now = now_ms()
  redis.call('ZREM', KEYS[3], old)
  redis.call('ZREM', KEYS[4], old)
  redis.call('ZADD', KEYS[3], 0, new)
  local left = redis.call('PTTL', new)
  if left >= 0 then redis.call('ZADD', KEYS[4], now + left, new)
  else redis.call('ZREM', KEYS[4], new) end
end
return answer
"""
)
_DIGEST = re.compile(r"[0-9a-f]{16}")
_GLOB_SPECIAL = str.maketrans({c: "\\" + c for c in "*?[]\\^"})


def _text(value: bytes | str) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


# Redis answering that it cannot take writes now, as if it were down (503, Retry-After): full
# (OOM under noeviction), a failed snapshot (MISCONF), a replica after a failover (READONLY,
# MASTERDOWN), a script running too long (BUSY). redis-py's classes drop the code from the
# text; the codes it has no class for stay in it.
_REFUSING_CLASSES = (OutOfMemoryError, ReadOnlyError, MasterDownError)
_REFUSING_WRITES = ("MISCONF ", "BUSY ", "OOM ", "READONLY ")


def client_options() -> dict[str, Any]:
    """The options of the store's redis-py client (options in the URL take precedence).

    Two-second socket timeouts: a Redis that does not answer makes the update a 503, not a
    hung worker. ``retry``: a command whose connection broke (``ConnectionError``: the server
    closed it between the pool's check and the command) is sent once more on a new
    connection, at once; a timeout is not in the list, so a command whose answer did not come
    in time is never sent twice. ``health_check_interval``: a connection idle for longer is
    checked with a PING (and replaced) before its next command."""
    return {
        "socket_timeout": 2,
        "socket_connect_timeout": 2,
        "health_check_interval": 30,
        "retry": Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
    }


class RedisStore(KVStore):
    """KV state in Redis, through one redis-py client (its pool is shared by the threads).
    ``client`` may decode responses or not; both are handled."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        url: str = "redis://",
        prefix: str = "",
        bot: int | None = None,
    ) -> None:
        super().__init__(prefix=prefix, bot=bot)
        self.client = client
        self.url = url
        self._indexed_write_script = client.register_script(_INDEXED_WRITE)
        self._indexed_scan_script = client.register_script(_INDEXED_SCAN)
        self._indexed_checked: set[str] = set()  # families whose upgrade index is known built
        if PACK in prefix:
            raise ValueError(f"a Redis store's prefix cannot contain {PACK!r} (packed keys)")
        self._get_many_lua = client.register_script(_GET_MANY)
        self._set_lua = client.register_script(_SET)
        self._replace = client.register_script(_REPLACE_IF_EQUAL)
        self._delete_if_equal_lua = client.register_script(_DELETE_IF_EQUAL)
        self._increment_lua = client.register_script(_INCREMENT)
        self._apply_once_lua = client.register_script(_APPLY_ONCE)
        self._claim_lua = client.register_script(_SET_IF_ABSENT_AND_INCREMENT)
        self._claim_or_finish_lua = client.register_script(_CLAIM_OR_FINISH)
        self._move_lua = client.register_script(_MOVE)

    @classmethod
    def from_url(cls, url: str, *, prefix: str = "", bot: int | None = None) -> RedisStore:
        """A store with a client (and pool) of its own, made with ``client_options``."""
        client = redis.Redis.from_url(url, **client_options())
        return cls(client, url=url, prefix=prefix, bot=bot)

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except RedisTimeoutError as exc:
            # redis-py raises it for a connect that timed out and for an answer that did not
            # come in time; the second may still run on a hung server when it resumes, so the
            # outcome of either is reported unknown (callers settle it: stats.unsettled).
            raise StateOutcomeUnknownError(f"Redis KV store did not answer: {exc}") from exc
        except RedisConnectionError as exc:
            raise StateUnavailableError(f"Redis KV store unavailable: {exc}") from exc
        except _REFUSING_CLASSES as exc:
            raise StateUnavailableError(f"Redis KV store refuses writes: {exc}") from exc
        except ResponseError as exc:
            if str(exc).startswith(_REFUSING_WRITES):
                raise StateUnavailableError(f"Redis KV store refuses writes: {exc}") from exc
            if "not an integer" in str(exc):
                raise StateError("cannot increment: the key does not hold an integer") from exc
            raise StateError(f"Redis KV store error: {exc}") from exc
        except RedisError as exc:
            raise StateError(f"Redis KV store error: {exc}") from exc

    def _indexes(self, raw_key: str) -> list[str] | None:
        """The index and expiry sets of ``raw_key``'s family, if that family is indexed."""
        family = raw_key[len(self.prefix) :].partition(":")[0]
        if family not in INDEXED_FAMILIES:
            return None
        return [f"{self.prefix}#index:{family}", f"{self.prefix}#expiry:{family}"]

    def _indexed_write(
        self,
        raw_key: str,
        indexes: list[str],
        mode: str,
        text: str = "",
        ttl_ms: int | None = None,
        expected: str = "",
    ) -> bool:
        with self._errors():
            done = self._indexed_write_script(
                keys=[raw_key, *indexes],
                args=[mode, text, "" if ttl_ms is None else ttl_ms, expected],
            )
        return bool(done)

    def _get(self, raw_key: str) -> str | None:
        with self._errors():
            if PACK in raw_key:
                group, _, field = raw_key.rpartition(PACK)
                value = self.client.hget(group + PACK, field)
            else:
                value = self.client.get(raw_key)
        return None if value is None else _text(value)

    def _get_many(self, raw_keys: list[str]) -> list[str | None]:
        with self._errors():
            if any(PACK in raw_key for raw_key in raw_keys):
                values = self._get_many_lua(keys=raw_keys)
            else:
                values = self.client.mget(raw_keys)
        return [None if value is None else _text(value) for value in values]

    def _set(self, raw_key: str, text: str, ttl_ms: int | None) -> None:
        if (indexes := self._indexes(raw_key)) is not None:
            self._indexed_write(raw_key, indexes, "set", text, ttl_ms)
            return
        with self._errors():
            if PACK in raw_key:
                self._set_lua(keys=[raw_key], args=[text, _ttl_text(ttl_ms), ""])
            else:
                self.client.set(raw_key, text, px=ttl_ms)

    def _delete(self, raw_key: str) -> None:
        if (indexes := self._indexes(raw_key)) is not None:
            self._indexed_write(raw_key, indexes, "del")
            return
        with self._errors():
            if PACK in raw_key:
                group, _, field = raw_key.rpartition(PACK)
                self.client.hdel(group + PACK, field)
            else:
                self.client.delete(raw_key)

    def _delete_if_equal(self, raw_key: str, expected: str) -> bool:
        if (indexes := self._indexes(raw_key)) is not None:
            return self._indexed_write(raw_key, indexes, "deleq", expected=expected)
        with self._errors():
            return bool(self._delete_if_equal_lua(keys=[raw_key], args=[expected]))

    def _set_if_absent(self, raw_key: str, text: str, ttl_ms: int | None) -> bool:
        if (indexes := self._indexes(raw_key)) is not None:
            return self._indexed_write(raw_key, indexes, "nx", text, ttl_ms)
        with self._errors():
            if PACK in raw_key:
                return bool(self._set_lua(keys=[raw_key], args=[text, _ttl_text(ttl_ms), "nx"]))
            return bool(self.client.set(raw_key, text, px=ttl_ms, nx=True))

    def _replace_if_equal(self, raw_key: str, expected: str, text: str, ttl_ms: int | None) -> bool:
        if (indexes := self._indexes(raw_key)) is not None:
            return self._indexed_write(raw_key, indexes, "eq", text, ttl_ms, expected)
        with self._errors():
            done = self._replace(
                keys=[raw_key], args=[expected, text, "" if ttl_ms is None else ttl_ms]
            )
        return bool(done)

    def _increment(self, raw_key: str, by: int, ttl_ms: int | None) -> int:
        with self._errors():
            value = self._increment_lua(keys=[raw_key], args=[by, "" if ttl_ms is None else ttl_ms])
        return int(value)

    def _set_if_absent_and_increment(
        self,
        raw_key: str,
        text: str,
        ttl_ms: int | None,
        ops: list[RawOp],
        raw_absent: str | None = None,
    ) -> list[int] | None:
        args: list[Any] = [text, "" if ttl_ms is None else ttl_ms]
        for op in ops:
            args += [op.arg, "" if op.ttl_ms is None else op.ttl_ms]
        keys = [raw_key, raw_absent or raw_key, *(op.key for op in ops)]
        with self._errors():
            values = self._claim_lua(keys=keys, args=args)
        return None if values is None else [int(value) for value in values]

    def _claim_or_finish(self, step: RawFinish) -> tuple[bool, list[int]] | None:
        packed_increments = [
            [op.arg, _ttl_text(op.ttl_ms), "" if trigger is None else str(trigger)]
            for op, trigger in zip(step.increments, step.triggers, strict=True)
        ]
        args = [
            step.claim,
            _ttl_text(step.claim_ttl_ms),
            step.done,
            _ttl_text(step.done_ttl_ms),
            "0" if step.marker is None else "1" if step.write_marker else "2",
            _pack(packed_increments),
            _pack([[op.kind, op.arg, _ttl_text(op.ttl_ms)] for op in step.ops]),
        ]
        keys = [step.key, step.marker or step.key, step.done_key]
        keys += [op.key for op in step.increments]
        keys += [op.key for op in step.ops]
        with self._errors():
            answer = self._claim_or_finish_lua(keys=keys, args=args)
        if answer is None:
            return None
        return int(answer[0]) == 1, [int(value) for value in answer[1:]]

    def _scan(
        self, raw_prefix: str, cursor: str | None, limit: int
    ) -> tuple[list[str], str | None]:
        """Page through SCAN: whole SCAN batches while they fit in the page.

        A batch is never cut where it can be helped, since a SCAN call read again does not
        answer the same batch in the same order once Redis resized its table (a rehash moves
        each bucket's keys in reverse order) or keys of the buckets it visits came or went:
        a page stops before a batch that does not fit, and its cursor is that batch's SCAN
        cursor. A page's later calls ask for the room left at the rate of matches found so
        far (``_counts``), and a page with less than an eighth of it left ends without one.
        Only a page's first batch may be read again with a smaller COUNT; when even one
        bucket's matching keys (COUNT 1) outnumber the limit, that batch is cut (``_cut``) and
        its cursor says which keys of it were returned, by a digest of their names.

        Our cursor is ``<last key> <redis cursor> <skip> [<digest>]``: the last key returned
        (so that the cursor starts with the prefix, as the contract asks), the SCAN call to
        make next, and, after a cut, how many keys of that call's batch were returned and the
        digest of those keys. Resuming a cut reads the same call again and continues after
        them if the batch's first ``skip`` keys are those keys; else it starts the batch
        again: a key may come twice, never not at all.
        """
        if (indexes := self._indexes(raw_prefix)) is not None:
            return self._indexed_scan(raw_prefix, indexes, cursor, limit)
        scan_cursor, skip, digest = self._parse_cursor(cursor)
        if PACK in raw_prefix:  # within one group: its hash, whose fields are filtered
            match = raw_prefix.rpartition(PACK)[0].translate(_GLOB_SPECIAL) + PACK
        else:
            match = raw_prefix.translate(_GLOB_SPECIAL) + "*"
        page: list[str] = []
        counted = 0  # the COUNTs of the calls whose batches the page took
        with self._errors():
            if skip:
                next_scan, batch = self._scan_call(scan_cursor, match, 1, raw_prefix)
                start = skip if _returned(batch, skip, digest) else 0
                if len(batch) - start > limit:
                    cut = self._cut(batch, start + limit, scan_cursor)
                    return batch[start : start + limit], cut
                page, scan_cursor, counted = batch[start:], next_scan, 1
                if scan_cursor == 0:
                    return page, None
            while len(page) < limit:
                if page and (limit - len(page)) * 8 < limit:
                    break  # nearly full: the next batch starts the next page
                for count in _counts(limit, len(page), counted):
                    next_scan, batch = self._scan_call(scan_cursor, match, count, raw_prefix)
                    if len(page) + len(batch) <= limit:
                        break
                    if page:  # the next page starts with this batch
                        return page, self._cursor(page[-1], scan_cursor)
                else:  # one bucket's keys outnumber the limit
                    return batch[:limit], self._cut(batch, limit, scan_cursor)
                page.extend(batch)
                scan_cursor, counted = next_scan, counted + count
                if scan_cursor == 0:
                    return page, None
            return page, self._cursor(page[-1], scan_cursor)

    def _scan_call(
        self, scan_cursor: int, match: str, count: int, raw_prefix: str
    ) -> tuple[int, list[str]]:
        """One SCAN call's keys; a group of packed keys (a hash named ``<group>#``) comes as
        its fields' keys (``<group>#<field>``), in the hash's order, which a call read again
        answers alike while the group is unchanged."""
        next_scan, batch = self.client.scan(scan_cursor, match=match, count=count)
        keys = [_text(key) for key in batch]
        groups = [key for key in keys if key.endswith(PACK)]
        if not groups:
            return int(next_scan), keys
        pipe = self.client.pipeline(transaction=False)
        for name in groups:
            pipe.hkeys(name)
        fields = dict(zip(groups, pipe.execute(), strict=True))
        expanded: list[str] = []
        for key in keys:
            if key in fields:
                found = (key + _text(field) for field in fields[key])
                expanded += [k for k in found if k.startswith(raw_prefix)]
            else:
                expanded.append(key)
        return int(next_scan), expanded

    def _indexed_scan(
        self, raw_prefix: str, indexes: list[str], cursor: str | None, limit: int
    ) -> tuple[list[str], str | None]:
        """A page of an indexed family from its index: one script call, whatever else the
        Redis holds. The cursor is the last key returned, as on the other backends."""
        low = f"({self._raw(cursor)}" if cursor else f"[{raw_prefix}"
        high = f"({prefix_successor(raw_prefix)}"
        with self._errors():
            self._index_older_keys(indexes)
            batch = self._indexed_scan_script(keys=indexes, args=[low, high, limit])
        page = [_text(key) for key in batch]
        next_cursor = self._logical(page[-1]) if len(page) == limit else None
        return page, next_cursor

    def _index_older_keys(self, indexes: list[str]) -> None:
        """Index the keys of a family written before it was indexed (by an older version), once
        per Redis: one SCAN walk, then ``#indexed:<family>`` says it is done. Each store checks
        that marker once. A key that goes away meanwhile leaves an entry the scan drops."""
        family = indexes[0].partition("#index:")[2]
        if family in self._indexed_checked:
            return
        marker = f"{self.prefix}#indexed:{family}"
        if self.bot is not None:
            marker += f":{self.bot}"
        if not self.client.exists(marker):
            seconds, micros = self.client.time()
            now_ms = int(seconds) * 1000 + int(micros) // 1000
            match = self._raw(f"{family}:").translate(_GLOB_SPECIAL) + "*"
            batch: list[str] = []
            for key in self.client.scan_iter(match=match, count=1000):
                batch.append(_text(key))
                if len(batch) == 500:
                    self._index_batch(indexes, batch, now_ms)
                    batch = []
            self._index_batch(indexes, batch, now_ms)
            self.client.set(marker, "1")
        self._indexed_checked.add(family)

    def _index_batch(self, indexes: list[str], keys: list[str], now_ms: int) -> None:
        if not keys:
            return
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.pttl(key)
        ttls = pipe.execute()
        live = {key: ttl for key, ttl in zip(keys, ttls, strict=True) if ttl != -2}
        if not live:
            return
        pipe = self.client.pipeline(transaction=False)
        pipe.zadd(indexes[0], dict.fromkeys(live, 0))
        expiring = {key: now_ms + ttl for key, ttl in live.items() if ttl >= 0}
        if expiring:
            pipe.zadd(indexes[1], expiring)
        pipe.execute()

    def _cursor(self, raw_last_key: str, scan_cursor: int) -> str:
        return f"{self._logical(raw_last_key)} {scan_cursor} 0"

    def _cut(self, batch: list[str], returned: int, scan_cursor: int) -> str:
        """The cursor after the first ``returned`` keys of ``batch``, the SCAN call's."""
        last = self._logical(batch[returned - 1])
        return f"{last} {scan_cursor} {returned} {_digest(batch[:returned])}"

    def _parse_cursor(self, cursor: str | None) -> tuple[int, int, str | None]:
        """(SCAN cursor, keys of its batch returned, their digest: None if no cut or a
        cursor of an older version, which had none)."""
        if cursor is None:
            return 0, 0, None
        # Keys hold no spaces, so the spaces end the key, the SCAN cursor and the skip.
        parts = cursor.split(" ")
        if len(parts) not in (3, 4):
            raise InvalidValueError(f"malformed scan cursor {cursor[:80]!r}")
        scan, skip = ascii_int(parts[1], digits=20), ascii_int(parts[2], digits=4)
        digest = parts[3] if len(parts) == 4 else None
        if scan is None or skip is None or (digest is not None and not _DIGEST.fullmatch(digest)):
            raise InvalidValueError(f"malformed scan cursor {cursor[:80]!r}")
        return scan, skip, digest

    def _apply_once(
        self, raw_marker: str, marker_text: str, marker_ttl_ms: int | None, ops: list[RawOp]
    ) -> bool:
        packed = _pack([[op.kind, op.arg, _ttl_text(op.ttl_ms)] for op in ops])
        args = [marker_text, "" if marker_ttl_ms is None else marker_ttl_ms, packed]
        with self._errors():
            done = self._apply_once_lua(keys=[raw_marker, *(op.key for op in ops)], args=args)
        return bool(done)

    def _get_flag(self, raw_name: str) -> bool:
        with self._errors():
            return bool(self.client.exists(raw_name))

    def _set_flag(self, raw_name: str) -> None:
        with self._errors():
            self.client.set(raw_name, "1")

    def _raw_page(
        self, raw_prefix: str, cursor: str | None, limit: int
    ) -> tuple[list[str], str | None]:
        """One SCAN call's keys (a group of packed keys as its hash); the cursor SCAN's."""
        match = raw_prefix.translate(_GLOB_SPECIAL) + "*"
        with self._errors():
            next_scan, batch = self.client.scan(int(cursor or 0), match=match, count=limit)
        return [_text(key) for key in batch], None if int(next_scan) == 0 else str(next_scan)

    def _move(self, raw_from: str, raw_to: str) -> int:
        indexes = self._indexes(raw_from)
        keys = [raw_from, raw_to, *(indexes or ())]
        args = ["0" if indexes is None else "1", *FINAL_TEXTS]
        with self._errors():
            return int(self._move_lua(keys=keys, args=args))

    def memory_status(self) -> MemoryStatus:
        """``maxmemory-policy``, ``used_memory`` and ``maxmemory`` from INFO memory (the
        policy from CONFIG GET where INFO does not say it). Managed Redis often refuses CONFIG
        and may refuse INFO: what it refuses is None."""
        with self._errors():
            try:
                info: dict[str, Any] = self.client.info("memory")
            except ResponseError:  # NOPERM, or a renamed command
                info = {}
            policy = info.get("maxmemory_policy")
            if policy is None:
                try:
                    policy = self.client.config_get("maxmemory-policy").get("maxmemory-policy")
                except ResponseError:
                    policy = None
        used, limit = info.get("used_memory"), info.get("maxmemory")
        return MemoryStatus(
            policy=None if policy is None else _text(policy),
            used_bytes=None if used is None else int(used),
            max_bytes=None if limit is None else int(limit),
        )

    def _ping(self) -> None:
        with self._errors():
            self.client.ping()

    def close(self) -> None:
        """Close the client; its pool too when the client made it (``from_url``)."""
        self.client.close()


def _ttl_text(ttl_ms: int | None) -> str:
    return "" if ttl_ms is None else str(ttl_ms)


_pack_rows = compact_json_encoder(sort_keys=False, allow_nan=True)


def _pack(rows: list[list[str]]) -> str:
    """Many small arguments as one JSON argument (cheaper to pack than one each)."""
    return _pack_rows(rows)


def _counts(limit: int, taken: int, counted: int) -> tuple[int, ...]:
    """The COUNTs to try for a page's next SCAN call until its batch fits (``RedisStore._scan``).

    The first call: the page's own COUNT, then fewer buckets, then one. A later call asks for
    about nine tenths of the room left, at the rate of matches the page's calls found so far
    (``taken`` keys in ``counted``), so that its batch rarely overflows (then the page ends
    before it, and that call is made again by the next page); never more than the first."""
    most = max(limit, 10)
    if not taken:
        return tuple(dict.fromkeys((most, limit, 1)))
    room = limit - taken
    return (max(10, min(most, room * 9 * counted // (10 * taken))),)


def _digest(raw_keys: list[str]) -> str:
    """A digest of a set of keys' names (their order does not count)."""
    text = "\n".join(sorted(raw_keys)).encode("utf-8")
    return hashlib.blake2b(text, digest_size=8).hexdigest()


def _returned(batch: list[str], skip: int, digest: str | None) -> bool:
    """Whether the first ``skip`` keys of a SCAN batch read again are the keys a cut returned
    of it (``digest``): then every other key of the batch comes after them."""
    return digest is not None and skip <= len(batch) and _digest(batch[:skip]) == digest
