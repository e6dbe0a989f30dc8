#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) into build-fuzz/ and runs each for
# SECONDS (default 30). Seeds: files of ../shared (linked, never copied) and small valid
# inputs generated here. Exit status 1 on any crash, leak or sanitizer report; the
# reproducer is left in build-fuzz/artifacts/. Usage: fuzz/run.sh [SECONDS] [TARGET...]
# SPECSWEEP_FUZZ_RUNS=N ends each target after N executions instead, if that comes first
# (fuzz/run.sh 7200 with SPECSWEEP_FUZZ_RUNS=1000000: a million executions per target).
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_gguf fuzz_safetensors fuzz_tokenizer_json fuzz_llama2c_checkpoint
                                      fuzz_llama2c_tokenizer fuzz_experiment)
if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a \
     >/dev/null 2>&1; then
  echo "fuzz: SKIPPED (needs clang++ and libclang-rt-dev: apt-get install clang libclang-rt-dev libomp-dev)"
  exit 0
fi
B=build-fuzz
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DSPECSWEEP_FUZZ=ON \
  -DSPECSWEEP_BUILD_TESTS=OFF -DSPECSWEEP_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null || exit 1
# The GGUF seeds are written by `specsweep synth`: an existing build's binary when there is
# one (SPECSWEEP_BIN, else build/specsweep), so only the fuzz targets compile under ASan.
bin=${SPECSWEEP_BIN:-build/specsweep}
[ -x "$bin" ] || bin=$B/specsweep
build=("${targets[@]}")
[ "$bin" = $B/specsweep ] && build+=(specsweep)
cmake --build $B -j"$(nproc)" --target "${build[@]}" >/dev/null || exit 1

# ---- seeds (regenerated each run; small so that mutation stays fast)
S=$B/seeds
rm -rf $S
mkdir -p $S $B/corpus $B/artifacts
shared=../shared
le32() { printf "\\x$(printf %02x $(($1 & 255)))\\x$(printf %02x $(($1 >> 8 & 255)))\\x$(printf %02x $(($1 >> 16 & 255)))\\x$(printf %02x $(($1 >> 24 & 255)))"; }
le64() { le32 "$1"; le32 0; }
zeros() { head -c "$1" /dev/zero; }
link() { [ -f "$1" ] && ln -sf "$(realpath "$1")" "$2"; }

# llama2.c checkpoint: dim 8, ffn 16, 1 layer, 2 heads, 2 kv heads, vocab 32 (shared
# classifier), 8 positions; all-zero weights.
mkdir -p $S/fuzz_llama2c_checkpoint
d=8 h=16 v=32 t=8 hd=4
floats=$((v*d + d + 4*d*d + d + 3*h*d + d + 2*t*hd/2))
{ for x in $d $h 1 2 2 $v $t; do le32 $x; done; zeros $((4*floats)); } > $S/fuzz_llama2c_checkpoint/tiny.bin
{ for x in $d $h 1 2 2 $((-v)) $t; do le32 $x; done; zeros $((4*(floats + v*d))); } > $S/fuzz_llama2c_checkpoint/tiny-wcls.bin

# llama2.c tokenizer: <unk>, <s>, </s>, a, b, ab, space.
mkdir -p $S/fuzz_llama2c_tokenizer
{ le32 8; for p in '<unk>' $'\n<s>\n' $'\n</s>\n' a b ab ' ' ' a'; do zeros 4; le32 ${#p}; printf %s "$p"; done; } \
  > $S/fuzz_llama2c_tokenizer/tiny.bin
link $shared/models/tinystories-260k/tok512.bin $S/fuzz_llama2c_tokenizer/tok512.bin

# HF directory: config.json + "\n#SAFETENSORS\n" + model.safetensors (fuzz_safetensors.cpp).
mkdir -p $S/fuzz_safetensors
cfg='{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":8,"intermediate_size":16,'
cfg+='"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1,"vocab_size":32,'
cfg+='"max_position_embeddings":16,"rms_norm_eps":1e-05,"rope_theta":10000.0,"bos_token_id":1,"eos_token_id":2}'
hdr='{' off=0 sep=''
add() {  # name, shape, element count
  hdr+="$sep\"$1\":{\"dtype\":\"F32\",\"shape\":[$2],\"data_offsets\":[$off,$((off + 4*$3))]}"
  off=$((off + 4*$3)) sep=','
}
add model.embed_tokens.weight 32,8 256
add model.layers.0.input_layernorm.weight 8 8
add model.layers.0.self_attn.q_proj.weight 8,8 64
add model.layers.0.self_attn.k_proj.weight 4,8 32
add model.layers.0.self_attn.v_proj.weight 4,8 32
add model.layers.0.self_attn.o_proj.weight 8,8 64
add model.layers.0.post_attention_layernorm.weight 8 8
add model.layers.0.mlp.gate_proj.weight 16,8 128
add model.layers.0.mlp.down_proj.weight 8,16 128
add model.layers.0.mlp.up_proj.weight 16,8 128
add model.norm.weight 8 8
hdr+=',"__metadata__":{"lm_head.weight":"model.embed_tokens.weight"}}'
{ printf %s "$cfg"; printf '\n#SAFETENSORS\n'; le64 ${#hdr}; printf %s "$hdr"; zeros $off; } > $S/fuzz_safetensors/tiny
if [ -f $shared/models/tinystories-656k/config.json ]; then
  # The real config with the real header (weights cut off: the loader reports the size).
  st=$shared/models/tinystories-656k/model.safetensors
  n=$(od -An -tu8 -N8 "$st" | tr -d ' ')
  { cat $shared/models/tinystories-656k/config.json; printf '\n#SAFETENSORS\n'; head -c $((8 + n)) "$st"; } \
    > $S/fuzz_safetensors/tinystories-656k-header
fi

# tokenizer.json: a small BPE with normalizer and decoder sequences, and the real one.
mkdir -p $S/fuzz_tokenizer_json
cat > $S/fuzz_tokenizer_json/tiny.json <<'EOF'
{"model":{"type":"BPE","byte_fallback":true,"fuse_unk":true,"unk_token":"<unk>",
 "vocab":{"<unk>":0,"<s>":1,"</s>":2,"<0x0A>":3,"a":4,"b":5,"ab":6,"▁":7,"▁ab":8},
 "merges":["a b",["▁","ab"]]},
 "added_tokens":[{"id":1,"content":"<s>","special":true},{"id":2,"content":"</s>","special":true},
                 {"id":9,"content":"<|end|>","special":false,"normalized":true}],
 "normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},
   {"type":"Replace","pattern":{"String":" "},"content":"▁"}]},
 "pre_tokenizer":null,
 "decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},
   {"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]}}
EOF
link $shared/models/tinystories-656k/tokenizer.json $S/fuzz_tokenizer_json/tinystories-656k.json

# GGUF: small synthetic models written by specsweep itself (with the 512-piece
# vocabulary when the shared models are there).
mkdir -p $S/fuzz_gguf
tok=()
[ -f $shared/models/tinystories-260k/tok512.bin ] && tok=(--tokenizer $shared/models/tinystories-260k/tok512.bin)
for type in f16 q8_0 q4_0; do
  "$bin" synth --shape dim=32,layers=1,heads=2,kv_heads=1,ffn=64,vocab=512,ctx=32 "${tok[@]}" \
    --type $type -o $S/fuzz_gguf/tiny-$type.gguf >/dev/null || exit 1
done

# Experiment files: the repository's, a JSON one, and an alias bomb.
mkdir -p $S/fuzz_experiment
for f in experiments/*.yaml; do ln -sf "$(realpath "$f")" $S/fuzz_experiment/; done
cat > $S/fuzz_experiment/tiny.json <<'EOF'
{"name": "t", "models": ["m"], "prompts": {"text": ["Once"]}, "repetitions": 2,
 "sweep": {"k": [2, 4], "max_new_tokens": 8, "sampling": {"temperature": [0, 0.7], "seed": [1]}},
 "decoders": ["ar", {"decoder": "self-spec", "draft_quant": ["q8_0", "none"]}]}
EOF
{ echo 'a0: &a0 [x, x, x, x, x, x, x, x, x, x]'
  for i in 1 2 3 4 5 6 7 8; do echo "a$i: &a$i [*a$((i-1)), *a$((i-1)), *a$((i-1)), *a$((i-1)), *a$((i-1)), *a$((i-1))]"; done
  echo 'name: *a8'; } > $S/fuzz_experiment/laughs.yaml

# ---- run
declare -A max_len=([fuzz_gguf]=100000 [fuzz_safetensors]=20000 [fuzz_tokenizer_json]=8192
                    [fuzz_llama2c_checkpoint]=16384 [fuzz_llama2c_tokenizer]=8192 [fuzz_experiment]=4096)
status=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The widest kernel family without the one-time calibration, as the tests run: under ASan,
# timing every family on 13 formats took the first input past the 10 s unit timeout, and
# every family gives the same bits, so the choice changes no code path the inputs reach.
export SPECSWEEP_KERNEL_CALIBRATION=${SPECSWEEP_KERNEL_CALIBRATION:-off}
for t in "${targets[@]}"; do
  mkdir -p $B/corpus/$t
  log=$B/$t.log
  runs=()
  [ -n "${SPECSWEEP_FUZZ_RUNS:-}" ] && runs=(-runs="$SPECSWEEP_FUZZ_RUNS")
  start=$SECONDS
  timeout $((secs + 120)) $B/fuzz/$t -max_total_time="$secs" "${runs[@]}" -max_len="${max_len[$t]:-8192}" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$B/artifacts/$t- $B/corpus/$t $S/$t >"$log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  if [ $rc -eq 0 ]; then
    echo "fuzz: $t: ok, ${execs:-?} executions in $((SECONDS - start))s, corpus $(ls $B/corpus/$t | wc -l) files"
  else
    echo "fuzz: $t: FAILED (exit $rc), log $log:"
    grep -m5 -E 'ERROR|runtime error|SUMMARY|Test unit written' "$log"
    status=1
  fi
done
exit $status
