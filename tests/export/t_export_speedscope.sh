# speedscope: the file validates against speedscope's file format schema (subset written from
# the published schema, tests/export/speedscope-schema.json); weights add up; frame indices valid.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
$GEN g.dlh --steps 10 --threads 2 || fail gentrace
"$DLHOOK_BIN" export -q -f speedscope -o g.json g.dlh || fail "export speedscope"
"$DLHOOK_BIN" export -q -f speedscope --weight bytes -o b.json g.dlh || fail "export speedscope bytes"
all=$(gpu_total g.dlh kernel,memcpy,memset)
pyassert g.json "sum(j['profiles'][0]['weights']) == $all == j['profiles'][0]['endValue']"
pyassert g.json "len(j['profiles'][0]['samples']) == len(j['profiles'][0]['weights'])"
pyassert g.json "all(0 <= i < len(j['shared']['frames']) for s in j['profiles'][0]['samples'] for i in s)"
pyassert g.json "any(j['shared']['frames'][s[-1]]['name'] == 'backward(float*)' for s in j['profiles'][0]['samples'])"
pyassert b.json "j['profiles'][0]['unit'] == 'bytes'"
need_venv_module jsonschema
for f in g.json b.json; do
  "$VPY" - "$ROOT/tests/export/speedscope-schema.json" "$f" <<'PY' || fail "$f does not match the speedscope schema"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft7Validator.check_schema(schema)
jsonschema.validate(json.load(open(sys.argv[2])), schema)
print(sys.argv[2], "valid")
PY
done
echo ok
