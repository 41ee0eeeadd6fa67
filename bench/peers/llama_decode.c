/*
 * llama.cpp as a peer of the GPU report's decode figures: the model bench/peers/gguf.ts wrote
 * (the engine's shape and weights), every layer on the GPU, `rows` sequences decoded together
 * in one batch a step, each sampled at temperature 1 over the whole vocabulary, as the engine
 * and the PyTorch peers sample. Built by scripts/llamaCpp.mjs against a prebuilt llama.cpp (its
 * Vulkan build), so it runs the same API as Dawn does on the same card.
 *
 * Decode tokens/s are measured as the engine's are: a run of N new tokens minus a run of 1 (the
 * prefill and first sample), over rows * (N - 1) tokens; the median of --reps such pairs.
 *
 *   llama_decode --model M.gguf --rows 1,32 --prompt P --new N [--reps 3] [--sampling host,backend] [--threads T]
 *       prints one JSON line a figure (each rows with each sampling, in that order, all from one
 *       process: the device and its pipelines are set up once): the runs, the device and where
 *       sampling ran
 *   llama_decode --model M.gguf --logits 5,17,3 [--gpu-layers 0]
 *       prints the logits of every position of that one prompt, as JSON: the check that the file
 *       holds the engine's model (bench/peers/llamaCpp.test.ts)
 *
 * --sampling host samples on the CPU from the logits, as llama-server and llama-cli do by
 * default; backend asks llama.cpp's sampler on the device (experimental). The record says which
 * ran: llama.cpp falls back to the host where the device cannot sample.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "llama.h"

static void die(const char *msg, const char *arg) {
    fprintf(stderr, "llama_decode: %s%s\n", msg, arg ? arg : "");
    exit(2);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static long parse_int(const char *s, const char *name) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 0) die("not a count: ", name);
    return v;
}

/* JSON has no infinity: a pair whose two runs took the same time has no rate (a busy machine can make the long one shorter: a negative rate). */
static void json_number(double x) {
    if (isfinite(x)) printf("%.9g", x);
    else printf("null");
}

/* A comma-separated list of counts of at least 1 (words == NULL), or of the words in `words` ("a|b"). */
static void check_list(const char *list, const char *name, const char *words) {
    char *copy = strdup(list), *save = NULL;
    int n = 0;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save), n++) {
        if (!words && parse_int(item, name) < 1) die("not a count of at least 1: ", name);
        if (words) {
            size_t len = strlen(item);
            const char *w = strstr(words, item);
            int whole = w && (w == words || w[-1] == '|') && (w[len] == '|' || w[len] == 0);
            if (!whole) die("--sampling takes host or backend, not ", item);
        }
    }
    if (n == 0 || list[strlen(list) - 1] == ',' || list[0] == ',') die("an empty list after ", name);
    free(copy);
}

/* llama.cpp's own log lines go to stderr only at warnings and above. */
static void quiet_log(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level >= GGML_LOG_LEVEL_WARN) fputs(text, stderr);
}

typedef struct {
    struct llama_context *ctx;
    struct llama_sampler **samplers;
    llama_batch batch;
    llama_token *prompts; /* [rows * prompt] */
    int rows, prompt;
    int backend_sampled;
} Run;

/* Decodes `batch` and samples each row's output; the tokens become the next batch, one a row. */
static void step(Run *r, int first_output, int output_stride, llama_pos pos) {
    if (llama_decode(r->ctx, r->batch) != 0) die("llama_decode failed", NULL);
    llama_token next[r->rows];
    for (int i = 0; i < r->rows; i++) {
        int idx = first_output + i * output_stride;
        if (llama_get_sampled_token_ith(r->ctx, idx) != LLAMA_TOKEN_NULL) r->backend_sampled = 1;
        next[i] = llama_sampler_sample(r->samplers[i], r->ctx, idx);
    }
    r->batch.n_tokens = r->rows;
    for (int i = 0; i < r->rows; i++) {
        r->batch.token[i] = next[i];
        r->batch.pos[i] = pos;
        r->batch.n_seq_id[i] = 1;
        r->batch.seq_id[i][0] = i;
        r->batch.logits[i] = 1;
    }
}

/* The prefill of every row's prompt and `n` sampled tokens a row; seconds, host waiting included. */
static double run(Run *r, int n) {
    llama_memory_clear(llama_get_memory(r->ctx), 1);
    double t0 = now_s();
    r->batch.n_tokens = r->rows * r->prompt;
    for (int i = 0; i < r->rows; i++)
        for (int t = 0; t < r->prompt; t++) {
            int j = i * r->prompt + t;
            r->batch.token[j] = r->prompts[j];
            r->batch.pos[j] = t;
            r->batch.n_seq_id[j] = 1;
            r->batch.seq_id[j][0] = i;
            r->batch.logits[j] = t == r->prompt - 1;
        }
    step(r, r->prompt - 1, r->prompt, r->prompt);
    for (int k = 1; k < n; k++) step(r, 0, 1, r->prompt + k);
    llama_synchronize(r->ctx);
    return now_s() - t0;
}

/* One figure: `rows` sequences decoded together, sampled where `sampling` says; one JSON line. */
static void measure(struct llama_model *model, int n_vocab, int rows, const char *sampling, int prompt, int new_tokens, int reps, int threads) {
    Run r = {.rows = rows, .prompt = prompt};
    r.samplers = calloc((size_t)rows, sizeof *r.samplers);
    struct llama_sampler_seq_config *configs = calloc((size_t)rows, sizeof *configs);
    for (int i = 0; i < rows; i++) {
        r.samplers[i] = llama_sampler_chain_init(llama_sampler_chain_default_params());
        llama_sampler_chain_add(r.samplers[i], llama_sampler_init_dist((uint32_t)(1000 + i)));
        configs[i] = (struct llama_sampler_seq_config){.seq_id = i, .sampler = r.samplers[i]};
    }
    struct llama_context_params cp = llama_context_default_params();
    /* The CPU's share (sampling, what stays on the host): one thread a core, as llama-bench
       takes; llama.cpp's default of 4 oversubscribes a smaller machine's cores. */
    cp.n_threads = cp.n_threads_batch = threads;
    /* Each sequence its own cache of prompt + new slots (not unified: no prefix is shared). */
    cp.n_seq_max = (uint32_t)rows;
    cp.kv_unified = 0;
    cp.n_ctx = (uint32_t)(rows * (prompt + new_tokens));
    cp.n_batch = (uint32_t)(rows * prompt);
    if (cp.n_ubatch > cp.n_batch) cp.n_ubatch = cp.n_batch;
    if (!strcmp(sampling, "backend")) {
        cp.samplers = configs;
        cp.n_samplers = (size_t)rows;
    }
    r.ctx = llama_init_from_model(model, cp);
    if (!r.ctx) die("cannot make a context", NULL);
    r.batch = llama_batch_init(rows * prompt, 0, 1);
    r.prompts = malloc(sizeof *r.prompts * (size_t)(rows * prompt));
    /* The GPU report's prompts (bench/gpuReport.ts decodePrompts): row b, position t. */
    for (int j = 0; j < rows * prompt; j++) r.prompts[j] = 3 + (llama_token)(((long)j * 7919) % 250);
    for (int j = 0; j < rows * prompt; j++)
        if (r.prompts[j] >= n_vocab) die("the prompts need a vocabulary of 253 tokens or more", NULL);

    run(&r, new_tokens); /* warm-up: pipelines compiled, buffers allocated */
    double *rates = calloc((size_t)reps, sizeof *rates), *longs = calloc((size_t)reps, sizeof *longs),
           *shorts = calloc((size_t)reps, sizeof *shorts);
    for (int k = 0; k < reps; k++) {
        shorts[k] = run(&r, 1);
        longs[k] = run(&r, new_tokens);
        rates[k] = (double)rows * (new_tokens - 1) / (longs[k] - shorts[k]);
    }
    double sorted[reps];
    memcpy(sorted, rates, sizeof sorted);
    qsort(sorted, (size_t)reps, sizeof *sorted, cmp_double);

    const char *device = "cpu";
    for (size_t d = 0; d < ggml_backend_dev_count(); d++) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(d);
        if (ggml_backend_dev_type(dev) != GGML_BACKEND_DEVICE_TYPE_CPU) {
            device = ggml_backend_dev_description(dev);
            break;
        }
    }
    printf("{\"rows\":%d,\"prompt\":%d,\"newTokens\":%d,\"tokensPerS\":", rows, prompt, new_tokens);
    json_number(sorted[reps / 2]);
    printf(",\"sampling\":\"%s\",\"device\":\"", r.backend_sampled ? "backend" : "host");
    for (const char *c = device; *c; c++)
        if (*c != '"' && *c != '\\') putchar(*c);
    printf("\",\"runs\":[");
    for (int k = 0; k < reps; k++) {
        printf("%s{\"shortS\":%.9f,\"longS\":%.9f,\"tokensPerS\":", k ? "," : "", shorts[k], longs[k]);
        json_number(rates[k]);
        printf("}");
    }
    printf("]}\n");
    llama_batch_free(r.batch);
    llama_free(r.ctx);
    for (int i = 0; i < rows; i++) llama_sampler_free(r.samplers[i]);
    free(r.samplers);
    free(configs);
    free(r.prompts);
    free(rates);
    free(longs);
    free(shorts);
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *rows_arg = "1", *sampling_arg = "host", *logits_arg = NULL;
    int prompt = 64, new_tokens = 128, reps = 3, gpu_layers = 999, threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) die("a value is missing after ", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--model")) model_path = v;
        else if (!strcmp(a, "--rows")) rows_arg = v;
        else if (!strcmp(a, "--prompt")) prompt = (int)parse_int(v, a);
        else if (!strcmp(a, "--new")) new_tokens = (int)parse_int(v, a);
        else if (!strcmp(a, "--reps")) reps = (int)parse_int(v, a);
        else if (!strcmp(a, "--gpu-layers")) gpu_layers = (int)parse_int(v, a);
        else if (!strcmp(a, "--threads")) threads = (int)parse_int(v, a);
        else if (!strcmp(a, "--sampling")) sampling_arg = v;
        else if (!strcmp(a, "--logits")) logits_arg = v;
        else die("unknown option ", a);
    }
    if (!model_path) die("--model is required", NULL);
    check_list(rows_arg, "--rows", NULL);
    check_list(sampling_arg, "--sampling", "host|backend");
    if (threads < 1) threads = 1;
    if (prompt < 1 || new_tokens < 2 || reps < 1) die("prompt and reps are at least 1, new tokens at least 2", NULL);

    llama_log_set(quiet_log, NULL);
    /* The backends (Vulkan, the CPU's) are libraries beside this program; ggml loads them from there. */
    const char *libs = getenv("LLAMA_DECODE_LIBS");
    if (libs) ggml_backend_load_all_from_path(libs);
    else ggml_backend_load_all();
    llama_backend_init();

    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = gpu_layers;
    struct llama_model *model = llama_model_load_from_file(model_path, mp);
    if (!model) die("cannot load ", model_path);
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

    if (logits_arg) { /* one prompt, every position's logits */
        int n = 1;
        for (const char *c = logits_arg; *c; c++) n += *c == ',';
        struct llama_context_params cp = llama_context_default_params();
        cp.n_ctx = cp.n_batch = cp.n_ubatch = (uint32_t)(n < 16 ? 16 : n);
        cp.n_seq_max = 1;
        cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
        cp.type_k = cp.type_v = GGML_TYPE_F32; /* the cache in f32 too: a mismatch then means a wrong file */
        struct llama_context *ctx = llama_init_from_model(model, cp);
        if (!ctx) die("cannot make a context", NULL);
        llama_batch b = llama_batch_init(n, 0, 1);
        char *list = strdup(logits_arg), *save = NULL;
        for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            int j = b.n_tokens++;
            b.token[j] = (llama_token)parse_int(tok, "--logits");
            if (b.token[j] >= n_vocab) die("a token past the vocabulary: ", tok);
            b.pos[j] = j;
            b.n_seq_id[j] = 1;
            b.seq_id[j][0] = 0;
            b.logits[j] = 1;
        }
        if (llama_decode(ctx, b) != 0) die("llama_decode failed", NULL);
        printf("{\"vocab\":%d,\"logits\":[", n_vocab);
        for (int j = 0; j < b.n_tokens; j++) {
            const float *l = llama_get_logits_ith(ctx, j);
            printf("%s[", j ? "," : "");
            for (int v = 0; v < n_vocab; v++) printf("%s%.9g", v ? "," : "", l[v]);
            printf("]");
        }
        printf("]}\n");
        return 0;
    }

    /* Every figure from one process: its device set up and its pipelines compiled once. */
    for (const char *rp = rows_arg; rp; rp = strchr(rp, ',') ? strchr(rp, ',') + 1 : NULL)
        for (const char *sp = sampling_arg; sp; sp = strchr(sp, ',') ? strchr(sp, ',') + 1 : NULL)
            measure(model, n_vocab, (int)strtol(rp, NULL, 10), *sp == 'h' ? "host" : "backend", prompt, new_tokens, reps, threads);
    llama_model_free(model);
    return 0;
}
