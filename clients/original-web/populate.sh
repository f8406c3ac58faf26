#!/bin/bash
# Start an openprogram server and the one-origin proxy for the original web
# client's static export, then write two sessions (a project, a tool call,
# context snapshots, a retried answer) over REST.
#   OUT      scratch folder (default $OUT): state, project, logs
#   BIN      the openprogram binary (default target/release/openprogram)
#   WEB_OUT  the client's `next build` output (apps/web/out)
set -e
OUT=${OUT:-$OUT}
BIN=${BIN:-$(dirname "$0")/../../target/release/openprogram}
WEB_OUT=${WEB_OUT:?set WEB_OUT to the apps/web/out of the client}
HERE=$(cd "$(dirname "$0")" && pwd)
rm -rf $OUT/state $OUT/proj; mkdir -p $OUT/state $OUT/proj/src
echo 'fn main() { println!("hi"); }' > $OUT/proj/src/main.rs
echo '# Demo project' > $OUT/proj/README.md
pkill -f "openprogram serve --bind 127.0.0.1:8765" || true; pkill -f "proxy.js 8790" || true
OPENPROGRAM_STATE_DIR=$OUT/state OPENPROGRAM_SERVER_ALLOWED_ORIGINS=http://127.0.0.1:8790 \
  nohup $BIN serve --bind 127.0.0.1:8765 > $OUT/server.log 2>&1 &
nohup node "$HERE/proxy.js" 8790 127.0.0.1:8765 "$WEB_OUT" > $OUT/proxy.log 2>&1 &
sleep 1.5
A=http://127.0.0.1:8765/api
post() { curl -s -X POST -H 'content-type: application/json' "$A$1" -d "$2"; echo; }
patch() { curl -s -X PATCH -H 'content-type: application/json' "$A$1" -d "$2"; echo; }
PID=$(post /projects "{\"path\":\"$OUT/proj\",\"name\":\"Demo\"}" | python3 -c 'import json,sys;print(json.load(sys.stdin)["id"])')
echo "project $PID"
S=/sessions/parser-fix/messages
post $S "{\"id\":\"u1\",\"role\":\"user\",\"content\":\"The tokenizer drops the last character of a quoted string. Can you find why?\",\"session\":{\"project_id\":\"$PID\",\"title\":\"Fix the tokenizer\"}}"
post $S '{"id":"a1","role":"assistant","content":"Let me look at the lexer first."}'
post $S '{"id":"t1","role":"tool","name":"grep","caller":"a1","content":{"pattern":"fn read_string"},"output":"src/lexer.rs:42: fn read_string(&mut self) -> Token {"}'
patch /sessions/parser-fix/messages/a1 '{"content":"Found it: `read_string` stops one byte early because the loop tests `i < end - 1`. Changing it to `i < end` keeps the closing character."}'
post /sessions/parser-fix/turns '{"context":{"messages":[{"role":"user","content":"The tokenizer drops the last character"}],"total_tokens":812},"context_id":"ctx-1"}'
post $S '{"id":"u2","role":"user","content":"Great. Please also add a regression test."}'
post $S '{"id":"a2","role":"assistant","content":"Added `quoted_string_keeps_last_char` to `tests/lexer.rs`; it fails before the fix and passes after."}'
post /sessions/parser-fix/turns '{"context":{"messages":[{"role":"user","content":"Please also add a regression test."}],"total_tokens":1403},"context_id":"ctx-2"}'
post $S '{"id":"u3","role":"user","content":"Now write a short commit message."}'
post $S '{"id":"a3","role":"assistant","content":"lexer: keep the closing character of quoted strings"}'
post /sessions/parser-fix/turns '{}'
post $S '{"id":"a3b","role":"assistant","predecessor":"u3","content":"Fix off-by-one in read_string: quoted strings kept all but their last character."}'
post /sessions/parser-fix/turns '{}'
S2=/sessions/release-notes/messages
post $S2 '{"role":"user","content":"Draft release notes for 0.4","session":{"title":"Release notes 0.4"}}'
post $S2 '{"role":"assistant","content":"## 0.4\n- Faster startup\n- Search across sessions"}'
post /sessions/release-notes/turns '{}'
echo done
