# The built-in demo model: a small random-weight Qwen2 checkpoint that the build
# generates with `glass random-model --like demo --shape-replies 151645` (so sampled
# replies are chains of common words that end with <|im_end|> after 20 to 80 tokens; the
# words are the tokenizer's, which is why the tokenizer is extracted first), plus the real Qwen2.5 tokenizer
# extracted from data/ (random-model --no-tokenizer --force keeps it and replaces the
# weights of an earlier build). No binary blob beyond the compressed tokenizer is in git.
set(GLASS_DEMO_MODEL_DIR "${CMAKE_BINARY_DIR}/demo-model")
file(ARCHIVE_EXTRACT INPUT "${PROJECT_SOURCE_DIR}/data/qwen2.5-tokenizer.tar.xz"
     DESTINATION "${GLASS_DEMO_MODEL_DIR}")

function(glass_add_demo_model_target glass_target)
  add_custom_command(
    OUTPUT "${GLASS_DEMO_MODEL_DIR}/model.safetensors"
    COMMAND $<TARGET_FILE:${glass_target}> random-model --like demo --seed 1 --shape-replies 151645 --out "${GLASS_DEMO_MODEL_DIR}"
            --no-tokenizer --force --quiet
    DEPENDS ${glass_target}
    COMMENT "Generating the built-in demo model (random weights) in ${GLASS_DEMO_MODEL_DIR}")
  add_custom_target(demo_model ALL DEPENDS "${GLASS_DEMO_MODEL_DIR}/model.safetensors")
endfunction()
