-- wrk script of bench/run.py: POSTs updates to the webhook, each with an update id unique
-- across wrk's threads (thread n counts up from base + n * 100,000,000).
-- wrk -s bench/updates.lua URL -- KIND BASE USERS OWNER SECRET FIRST_MESSAGE
--   KIND: group (a group message), start (/start in private), callback (a panel button)
local threads = {}
local texts = {
  "hello world", "coffee and the weather today", "small talk about the day",
  "did anyone see the match yesterday", "ok", "see you all tomorrow morning then",
}

function setup(thread)
  thread:set("index", #threads)
  table.insert(threads, thread)
end

function init(args)
  kind = args[1]
  first = tonumber(args[2]) + index * 100000000
  users = tonumber(args[3])
  owner = tonumber(args[4])
  first_message = tonumber(args[6] or "1")
  count = 0
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["X-Telegram-Bot-Api-Secret-Token"] = args[5]
end

function request()
  count = count + 1
  local id = first + count
  local now = os.time()
  local body
  if kind == "group" then
    local chat = -1001 - (id % 5)
    local user = 1 + (id % users)
    body = string.format(
      '{"update_id":%d,"message":{"message_id":%d,"date":%d,' ..
      '"chat":{"id":%d,"type":"supergroup","title":"Bench group"},' ..
      '"from":{"id":%d,"is_bot":false,"first_name":"Member %d"},"text":"%s"}}',
      id, id, now, chat, user, user, texts[id % #texts + 1])
  elseif kind == "start" then
    local user = 2000000000 + id % 100000000
    body = string.format(
      '{"update_id":%d,"message":{"message_id":%d,"date":%d,' ..
      '"chat":{"id":%d,"type":"private","first_name":"User"},' ..
      '"from":{"id":%d,"is_bot":false,"first_name":"User"},"text":"/start",' ..
      '"entities":[{"type":"bot_command","offset":0,"length":6}]}}',
      id, id, now, user, user)
  else
    -- Thread n presses on the owner's messages FIRST_MESSAGE + n * USERS + 0 ... USERS - 1,
    -- one each, then round again switching to the other panel view: every press changes its
    -- message (Telegram refuses an edit to the same content: "message is not modified").
    local view = (math.floor((count - 1) / users) % 2 == 0) and "panel:admins" or "panel:home"
    body = string.format(
      '{"update_id":%d,"callback_query":{"id":"cb%d","chat_instance":"1","data":"%s",' ..
      '"from":{"id":%d,"is_bot":false,"first_name":"Owner"},' ..
      '"message":{"message_id":%d,"date":%d,"chat":{"id":%d,"type":"private","first_name":"Owner"},' ..
      '"from":{"id":123456789,"is_bot":true,"first_name":"Bench bot"},"text":"Admin panel"}}}',
      id, id, view, owner, first_message + index * users + (count - 1) % users, now, owner)
  end
  return wrk.format(nil, nil, nil, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests":%d,"seconds":%.3f,"errors":%d,"p50_ms":%.3f,"p99_ms":%.3f}\n',
    summary.requests, summary.duration / 1e6,
    e.connect + e.read + e.write + e.timeout + e.status,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
