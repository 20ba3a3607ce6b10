// Reference logits of a GGUF model from llama.cpp, for scripts/make_gguf_fixtures.py.
//
// Hand-run instrument (never built by the project or its tests): compiled by make_gguf_fixtures.py against
// the llama.cpp build it is given, because llama-server reports only log-probabilities and leaves out those
// of tokens that end inside a UTF-8 character. This reads the raw logits through llama.cpp's public API.
//
// Usage: gguf_reference_logits MODEL.gguf N_GEN ID,ID,...
// Runs the prompt as one batch (flash attention off, f32 K/V cache, 2 threads), then N_GEN greedy steps
// (argmax of the raw logits, end-of-generation tokens included, one token per decode call), and prints one
// JSON object: {"n_vocab": V, "greedy_ids": [...], "logits": [[V floats] for the last prompt position and
// after each generated token but the last]}.
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

static void fail(const char * what) {
    fprintf(stderr, "gguf_reference_logits: %s\n", what);
    exit(1);
}

int main(int argc, char ** argv) {
    if (argc != 4) {
        fail("usage: gguf_reference_logits MODEL.gguf N_GEN ID,ID,...");
    }
    const int n_gen = atoi(argv[2]);
    std::vector<llama_token> prompt;
    for (std::string s = argv[3]; !s.empty();) {
        size_t comma = s.find(',');
        prompt.push_back((llama_token) atoi(s.substr(0, comma).c_str()));
        s = comma == std::string::npos ? "" : s.substr(comma + 1);
    }
    if (prompt.empty() || n_gen < 1) {
        fail("empty prompt or N_GEN < 1");
    }

    llama_log_set([](enum ggml_log_level, const char *, void *) {}, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.use_extra_bufts = false; // no AMX / repacked weights: see SERVER_FLAGS in make_gguf_fixtures.py
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fail("cannot load the model");
    }
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 1024;
    cp.n_batch = 1024;
    cp.n_ubatch = 1024;
    cp.n_threads = 2;
    cp.n_threads_batch = 2;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = GGML_TYPE_F32;
    cp.type_v = GGML_TYPE_F32;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fail("cannot create the context");
    }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

    std::vector<llama_token> greedy;
    std::vector<std::vector<float>> logits;
    llama_batch batch = llama_batch_get_one(prompt.data(), (int32_t) prompt.size());
    llama_token next = 0;
    for (int step = 0; step < n_gen; ++step) {
        if (llama_decode(ctx, batch) != 0) {
            fail("llama_decode failed");
        }
        const float * l = llama_get_logits_ith(ctx, -1);
        logits.emplace_back(l, l + n_vocab);
        int best = 0;
        for (int i = 1; i < n_vocab; ++i) {
            if (l[i] > l[best]) {
                best = i;
            }
        }
        next = best;
        greedy.push_back(next);
        batch = llama_batch_get_one(&next, 1);
    }

    printf("{\"n_vocab\": %d, \"greedy_ids\": [", n_vocab);
    for (size_t i = 0; i < greedy.size(); ++i) {
        printf("%s%d", i ? ", " : "", greedy[i]);
    }
    printf("], \"logits\": [");
    for (size_t s = 0; s < logits.size(); ++s) {
        printf("%s[", s ? ", " : "");
        for (int i = 0; i < n_vocab; ++i) {
            printf("%s%.9g", i ? ", " : "", logits[s][i]);
        }
        printf("]");
    }
    printf("]}\n");

    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
