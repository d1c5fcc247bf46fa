/*
 * Planner input and output: the buffer-list JSON format (valid files and rejected ones), the
 * plan JSON (parsed back and compared with the plan), the SVG timeline (one titled rect per
 * placed buffer, axes, legend, escaping), the report, and the plan-buffers command line (exit
 * codes, one-line errors, --json, --svg, --pool, --help).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "checker.h"

static char tmpdir[512];

static int setup_dir(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "%s/planner-io-XXXXXX", TETHER_BINARY_DIR);
    return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int teardown_dir(void **state) {
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void path_in_tmp(char *out, size_t n, const char *name) {
    snprintf(out, n, "%s/%s", tmpdir, name);
}

static void write_text(const char *path, const char *text) {
    assert_int_equal(tether_plan_write_file(path, text), 0);
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static const char *const example_json =
    "{\n"
    "  \"comment\": \"two SRAM-first buffers, a graph input, a texture and an alias\",\n"
    "  \"pools\": [\n"
    "    {\"name\": \"sram\", \"scope\": \"global\", \"capacity\": 4096, \"alignment\": 16},\n"
    "    {\"name\": \"dram\", \"scope\": \"global\"},\n"
    "    {\"name\": \"gpu\", \"scope\": \"texture\", \"max_width\": 64, \"max_height\": 64}\n"
    "  ],\n"
    "  \"options\": {\"planner\": \"greedy-size\", \"plan_inputs\": false, \"seed\": 7},\n"
    "  \"buffers\": [\n"
    "    {\"name\": \"in\", \"size\": 3000, \"first\": 0, \"last\": 1, \"kind\": \"input\"},\n"
    "    {\"name\": \"conv1\", \"size\": 3000, \"first\": 1, \"last\": 2, \"pools\": [\"sram\", "
    "\"dram\"]},\n"
    "    {\"name\": \"conv2\", \"size\": 2000, \"first\": 2, \"last\": 3, \"pools\": [\"sram\", "
    "\"dram\"]},\n"
    "    {\"name\": \"conv2_flat\", \"size\": 2000, \"first\": 3, \"last\": 4, \"pools\": "
    "[\"sram\", \"dram\"], \"alias\": 1},\n"
    "    {\"name\": \"conv2_view\", \"size\": 2000, \"first\": 4, \"last\": 5, \"pools\": "
    "[\"sram\", \"dram\"], \"alias\": 1},\n"
    "    {\"name\": \"pinned\", \"size\": 256, \"first\": 0, \"last\": 5, \"pin\": {\"pool\": "
    "\"dram\", \"offset\": 8192}},\n"
    "    {\"name\": \"tex\", \"scope\": \"texture\", \"width\": 32, \"height\": 16, \"dtype\": "
    "\"float16\", \"first\": 1, \"last\": 3},\n"
    "    {\"name\": \"too_wide\", \"scope\": \"texture\", \"width\": 100, \"height\": 2, "
    "\"first\": 2, \"last\": 4, \"pools\": [\"gpu\", \"dram\"]}\n"
    "  ]\n"
    "}\n";

static void load_example(tether_plan_problem *p, tether_plan_options *o) {
    tether_plan_problem_init(p);
    tether_plan_options_init(o);
    int rc = tether_plan_problem_from_json(p, o, example_json);
    if (rc != 0) {
        fail_msg("%s", tether_last_error());
    }
}

static void test_input_format(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_options o;
    load_example(&p, &o);
    assert_int_equal(p.npools, 3);
    assert_int_equal(p.nbuffers, 8);
    assert_int_equal(p.pools[0].capacity, 4096);
    assert_int_equal(p.pools[1].capacity, TETHER_PLAN_UNBOUNDED);
    assert_int_equal(p.pools[1].alignment, TETHER_PLAN_DEFAULT_ALIGNMENT);
    assert_int_equal(p.pools[2].scope, TETHER_SCOPE_TEXTURE);
    assert_int_equal(p.pools[2].max_width, 64);
    assert_int_equal(o.algorithm, TETHER_PLAN_GREEDY_SIZE);
    assert_false(o.plan_inputs);
    assert_true(o.plan_outputs);
    assert_int_equal(o.seed, 7);
    const tether_plan_buffer *b = &p.buffers[tether_plan_problem_find_buffer(&p, "conv1")];
    assert_int_equal(b->npools, 2);
    assert_string_equal(b->pools[1], "dram");
    b = &p.buffers[tether_plan_problem_find_buffer(&p, "pinned")];
    assert_string_equal(b->pin_pool, "dram");
    assert_int_equal(b->pin_offset, 8192);
    b = &p.buffers[tether_plan_problem_find_buffer(&p, "tex")];
    assert_int_equal(b->size, 32 * 16 * 4 * 2); /* computed from the extent and float16 */
    assert_int_equal(b->dtype.bits, 16);
    assert_int_equal(p.buffers[0].kind, TETHER_PLAN_GRAPH_INPUT);
    assert_int_equal(p.buffers[3].alias_group, 1);

    tether_plan plan;
    assert_int_equal(tether_plan_run(&p, &o, &plan), 0);
    assert_plan_valid(&p, &o, &plan);
    assert_int_equal(plan.algorithm, TETHER_PLAN_GREEDY_SIZE);
    assert_int_equal(plan.assign[0].pool, -1);                      /* input: caller's */
    assert_int_equal(plan.assign[3].offset, plan.assign[4].offset); /* alias */
    assert_int_equal(plan.assign[5].offset, 8192);                  /* pin */
    assert_true(plan.assign[7].fallback);                           /* over 64 wide */
    assert_int_equal(plan.assign[6].pool, 2);                       /* texture */
    assert_int_equal(plan.nfallbacks, 1);
    tether_plan_close(&plan);
    tether_plan_problem_close(&p);
}

static void expect_reject(const char *text, const char *needle) {
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    tether_plan_pool keep = {"keep", TETHER_SCOPE_GLOBAL, 0, 0, 0, 0};
    assert_int_equal(tether_plan_problem_add_pool(&p, &keep), 0);
    tether_plan_options o;
    tether_plan_options_init(&o);
    int rc = tether_plan_problem_from_json(&p, &o, text);
    if (rc == 0) {
        fail_msg("accepted: %s", text);
    }
    if (strstr(tether_last_error(), needle) == NULL) {
        fail_msg("error '%s' does not mention '%s'", tether_last_error(), needle);
    }
    /* nothing partial: the problem is as before */
    assert_int_equal(p.npools, 1);
    assert_int_equal(p.nbuffers, 0);
    assert_int_equal(o.algorithm, TETHER_PLAN_BEST);
    tether_plan_problem_close(&p);
}

static void test_input_rejects(void **state) {
    (void)state;
    expect_reject("{\"buffers\": [", "not valid JSON");
    expect_reject("[]", "must be an object");
    expect_reject("{\"pools\": []}", "\"buffers\" must be an array");
    expect_reject("{\"buffers\": [], \"extra\": 1}", "unknown key \"extra\"");
    expect_reject("{\"buffers\": [{\"name\": \"a\", \"sise\": 4, \"first\": 0, \"last\": 0}]}",
                  "buffer 'a': unknown key \"sise\"");
    expect_reject("{\"buffers\": [{\"name\": \"a\", \"size\": 1.5, \"first\": 0, \"last\": 0}]}",
                  "\"size\" must be an integer");
    expect_reject("{\"buffers\": [{\"name\": \"a\", \"size\": 4, \"first\": 0}]}",
                  "\"first\" and \"last\" are required");
    expect_reject("{\"buffers\": [{\"name\": \"a\", \"first\": 0, \"last\": 0}]}",
                  "\"size\" is required");
    expect_reject("{\"buffers\": [{\"name\": \"a\", \"size\": 4, \"first\": 2, \"last\": 1}]}",
                  "live interval");
    expect_reject("{\"buffers\": [{\"name\": \"t\", \"scope\": \"texture\", \"first\": 0, "
                  "\"last\": 0}]}",
                  "needs \"width\" and \"height\"");
    expect_reject("{\"buffers\": [{\"name\": \"a\", \"size\": 4, \"scope\": \"flash\", "
                  "\"first\": 0, \"last\": 0}]}",
                  "unknown scope 'flash'");
    expect_reject("{\"buffers\": [{\"name\": \"a\", \"size\": 4, \"first\": 0, \"last\": 0, "
                  "\"kind\": \"weights\"}]}",
                  "kind 'weights'");
    expect_reject("{\"buffers\": [{\"name\": \"a\", \"size\": 4, \"first\": 0, \"last\": 0, "
                  "\"pin\": {\"offset\": 0}}]}",
                  "needs a \"pool\"");
    expect_reject("{\"buffers\": [{\"name\": \"a\", \"size\": 4, \"first\": 0, \"last\": 0}, "
                  "{\"name\": \"a\", \"size\": 4, \"first\": 0, \"last\": 0}]}",
                  "declared twice");
    expect_reject("{\"pools\": [{\"name\": \"keep\"}], \"buffers\": []}", "declared twice");
    expect_reject("{\"pools\": [{\"name\": \"s\", \"capacity\": -1}], \"buffers\": []}",
                  "\"capacity\" must be an integer");
    expect_reject("{\"pools\": [{\"name\": \"s\", \"max_width\": 8}], \"buffers\": []}",
                  "texture pools only");
    expect_reject("{\"buffers\": [], \"options\": {\"planner\": \"magic\"}}",
                  "unknown planner 'magic'");
    expect_reject("{\"buffers\": [], \"options\": {\"texture_max_ratio\": 0.5}}",
                  "texture_max_ratio");
}

/* 3000 seeded mutations of the example: never a crash; a rejected text leaves the problem as
 * it was and says why; an accepted one plans validly or fails with a message. */
static void test_input_mutations(void **state) {
    (void)state;
    static const char alphabet[] = "{}[]\":,0123456789-.eE abcdefghijklmnoprstuvwxyz";
    size_t len = strlen(example_json);
    char *text = malloc(len + 64);
    assert_non_null(text);
    uint64_t x = 99;
    int accepted = 0;
    for (int m = 0; m < 3000; m++) {
        memcpy(text, example_json, len + 1);
        size_t n = len;
        int edits = 1 + m % 4;
        for (int e = 0; e < edits; e++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            size_t at = (size_t)(x % n);
            char c = alphabet[(x >> 32) % (sizeof(alphabet) - 1)];
            switch ((x >> 40) % 3) {
            case 0:
                text[at] = c;
                break;
            case 1:
                memmove(text + at, text + at + 1, n - at);
                n--;
                break;
            default:
                memmove(text + at + 1, text + at, n - at + 1);
                text[at] = c;
                n++;
            }
        }
        tether_plan_problem p;
        tether_plan_problem_init(&p);
        tether_plan_options o;
        tether_plan_options_init(&o);
        o.search_budget = 20;
        if (tether_plan_problem_from_json(&p, &o, text) != 0) {
            assert_true(strlen(tether_last_error()) > 0);
            assert_int_equal(p.npools, 0);
            assert_int_equal(p.nbuffers, 0);
        } else {
            accepted++;
            tether_plan plan;
            if (tether_plan_run(&p, &o, &plan) == 0) {
                assert_plan_valid(&p, &o, &plan);
                tether_plan_close(&plan);
            } else {
                assert_true(strlen(tether_last_error()) > 0);
                assert_null(plan.assign);
            }
        }
        tether_plan_problem_close(&p);
    }
    free(text);
    assert_true(accepted > 30); /* some mutations (e.g. inside names) stay valid */
}

static void test_load_errors(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    char path[600];
    path_in_tmp(path, sizeof(path), "missing.json");
    assert_int_equal(tether_plan_problem_load(&p, NULL, path), TETHER_ERR_IO);
    assert_non_null(strstr(tether_last_error(), "missing.json"));
    tether_plan_problem_close(&p);
}

static void test_plan_json(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_options o;
    load_example(&p, &o);
    tether_plan plan;
    assert_int_equal(tether_plan_run(&p, &o, &plan), 0);
    char *text = NULL;
    assert_int_equal(tether_plan_to_json(&p, &plan, &text), 0);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    assert_string_equal(cJSON_GetObjectItem(root, "algorithm")->valuestring, "greedy-size");
    assert_int_equal((int64_t)cJSON_GetObjectItem(root, "total_bytes")->valuedouble,
                     plan.total_bytes);
    assert_int_equal(cJSON_GetObjectItem(root, "fallbacks")->valueint, 1);
    cJSON *pools = cJSON_GetObjectItem(root, "pools");
    assert_int_equal(cJSON_GetArraySize(pools), 3);
    for (int k = 0; k < 3; k++) {
        cJSON *po = cJSON_GetArrayItem(pools, k);
        assert_string_equal(cJSON_GetObjectItem(po, "name")->valuestring, p.pools[k].name);
        assert_int_equal((int64_t)cJSON_GetObjectItem(po, "size")->valuedouble, plan.pools[k].size);
        assert_int_equal((int64_t)cJSON_GetObjectItem(po, "lower_bound")->valuedouble,
                         plan.pools[k].lower_bound);
    }
    assert_non_null(cJSON_GetObjectItem(cJSON_GetArrayItem(pools, 2), "texel_area"));
    cJSON *imgs = cJSON_GetObjectItem(root, "images");
    assert_int_equal(cJSON_GetArraySize(imgs), plan.nimages);
    cJSON *img0 = cJSON_GetArrayItem(imgs, 0);
    assert_string_equal(cJSON_GetObjectItem(img0, "pool")->valuestring, "gpu");
    assert_string_equal(cJSON_GetObjectItem(img0, "dtype")->valuestring, "float16");
    assert_int_equal(cJSON_GetObjectItem(img0, "width")->valueint, plan.images[0].width);
    cJSON *bufs = cJSON_GetObjectItem(root, "buffers");
    assert_int_equal(cJSON_GetArraySize(bufs), p.nbuffers);
    for (int i = 0; i < p.nbuffers; i++) {
        cJSON *b = cJSON_GetArrayItem(bufs, i);
        assert_string_equal(cJSON_GetObjectItem(b, "name")->valuestring, p.buffers[i].name);
        cJSON *pool = cJSON_GetObjectItem(b, "pool");
        const tether_plan_assignment *a = &plan.assign[i];
        if (a->pool < 0) {
            assert_true(cJSON_IsNull(pool));
            assert_true(cJSON_IsFalse(cJSON_GetObjectItem(b, "planned")));
            continue;
        }
        assert_string_equal(pool->valuestring, p.pools[a->pool].name);
        if (a->image >= 0) {
            assert_int_equal(cJSON_GetObjectItem(b, "image")->valueint, a->image);
            assert_null(cJSON_GetObjectItem(b, "offset"));
        } else {
            assert_int_equal((int64_t)cJSON_GetObjectItem(b, "offset")->valuedouble, a->offset);
        }
        assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItem(b, "fallback")), a->fallback);
    }
    cJSON_Delete(root);
    free(text);
    tether_plan_close(&plan);
    tether_plan_problem_close(&p);
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *s = strstr(hay, needle); s != NULL; s = strstr(s + 1, needle)) {
        n++;
    }
    return n;
}

static void test_svg(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_options o;
    load_example(&p, &o);
    tether_plan_buffer odd;
    memset(&odd, 0, sizeof(odd));
    odd.name = "a<b>&\"c\"";
    odd.size = 100;
    odd.first = 6;
    odd.last = 9;
    odd.pin_offset = -1;
    assert_int_equal(tether_plan_problem_add_buffer(&p, &odd, NULL), 0);
    tether_plan plan;
    assert_int_equal(tether_plan_run(&p, &o, &plan), 0);
    assert_plan_valid(&p, &o, &plan);
    char *svg = NULL;
    assert_int_equal(tether_plan_to_svg(&p, &plan, &svg), 0);
    int placed = 0;
    for (int i = 0; i < p.nbuffers; i++) {
        placed += plan.assign[i].pool >= 0;
    }
    assert_int_equal(count(svg, "<rect class=\"buf\""), placed);
    assert_int_equal(count(svg, "<title>"), placed);
    for (int i = 0; i < p.nbuffers; i++) {
        if (plan.assign[i].pool < 0 || strchr(p.buffers[i].name, '<') != NULL) {
            continue;
        }
        char want[128];
        snprintf(want, sizeof(want), "<title>%s:", p.buffers[i].name);
        assert_int_equal(count(svg, want), 1);
    }
    assert_int_equal(count(svg, "<title>a&lt;b&gt;&amp;&quot;c&quot;:"), 1);
    assert_null(strstr(svg, "a<b>"));
    assert_non_null(strstr(svg, "operator index"));
    assert_non_null(strstr(svg, "offset (bytes)"));
    assert_non_null(strstr(svg, "legend"));
    assert_non_null(strstr(svg, "texture fallback"));
    assert_non_null(strstr(svg, "1 buffer left to the caller"));
    assert_int_equal(count(svg, "<g class=\"lane\">"), 3); /* sram, dram, gpu */
    assert_non_null(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert_non_null(strstr(svg, "</svg>"));
    char path[600];
    path_in_tmp(path, sizeof(path), "plan.svg");
    write_text(path, svg);
    free(svg);
    tether_plan_close(&plan);
    tether_plan_problem_close(&p);
}

/* The largest y="..." of the picture's elements: where its content ends. */
static double content_end(const char *svg) {
    double end = 0;
    for (const char *at = strstr(svg, " y=\""); at; at = strstr(at + 1, " y=\"")) {
        double y = strtod(at + 4, NULL);
        end = y > end ? y : end;
    }
    return end;
}

/* The height="..." of the <svg> element. */
static double svg_height(const char *svg) {
    const char *at = strstr(svg, "<svg ");
    assert_non_null(at);
    at = strstr(at, " height=\"");
    assert_non_null(at);
    return strtod(at + 9, NULL);
}

/* Operator names on the axis and the graph inputs/outputs the caller provides; the picture of
 * a problem that does not fit. The names label the last plot's columns (inside its lane, not a
 * detached row under the inputs/outputs strip, which sits above the plots), the canvas ends
 * with its content, and the picture of a problem that does not fit has a legend and its tensors'
 * names as text (not only hover titles). */
static void test_svg_annotations(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    tether_plan_pool pool = {"sram", TETHER_SCOPE_GLOBAL, 1000, 16, 0, 0};
    tether_plan_pool pool2 = {"dram", TETHER_SCOPE_GLOBAL, 700, 16, 0, 0};
    assert_int_equal(tether_plan_problem_add_pool(&p, &pool), 0);
    assert_int_equal(tether_plan_problem_add_pool(&p, &pool2), 0);
    const char *names[] = {"conv<1>", "relu", "a_rather_long_operator_name_for_the_axis"};
    assert_int_equal(tether_plan_problem_set_operators(&p, names, 3), 0);
    assert_int_equal(tether_plan_problem_set_operators(&p, names, 3), 0); /* replaces */
    tether_plan_buffer b = {0};
    b.name = "t0";
    b.size = 600;
    b.first = 0;
    b.last = 1;
    b.pin_offset = -1;
    assert_int_equal(tether_plan_problem_add_buffer(&p, &b, NULL), 0);
    b.name = "t1";
    b.first = 1;
    b.last = 2;
    assert_int_equal(tether_plan_problem_add_buffer(&p, &b, NULL), 0);
    assert_int_equal(tether_plan_problem_add_io(&p, "x", TETHER_PLAN_GRAPH_INPUT, 0, 0, 64), 0);
    assert_int_equal(tether_plan_problem_add_io(&p, "y", TETHER_PLAN_GRAPH_OUTPUT, 2, 2, 8), 0);
    assert_int_equal(tether_plan_problem_add_io(&p, "z", TETHER_PLAN_INTERMEDIATE, 0, 0, 8),
                     TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_plan_problem_add_io(&p, "z", TETHER_PLAN_GRAPH_INPUT, 2, 1, 8),
                     TETHER_ERR_INVALID_ARG);
    tether_plan_options o;
    tether_plan_options_init(&o);
    tether_plan plan;
    assert_int_equal(tether_plan_run(&p, &o, &plan), 0); /* t1 spills to dram */
    char *svg = NULL;
    assert_int_equal(tether_plan_to_svg(&p, &plan, &svg), 0);
    assert_int_equal(count(svg, "<rect class=\"buf\""), 2);
    assert_int_equal(count(svg, "<rect class=\"iobuf\""), 2);
    assert_non_null(strstr(svg, "<title>x: graph input, 64 bytes, ops 0..0"));
    assert_non_null(strstr(svg, "<title>y: graph output, 8 bytes, ops 2..2"));
    assert_int_equal(count(svg, "<text class=\"op\""), 3);
    assert_non_null(strstr(svg, ">0 conv&lt;1&gt;<title>operator 0: conv&lt;1&gt;</title>"));
    assert_non_null(strstr(svg, ">2 a_rather_long_operato...<title>operator 2: "
                                "a_rather_long_operator_name_for_the_axis</title>"));
    const char *io = strstr(svg, "<g class=\"io\">"), *lane = strstr(svg, "<g class=\"lane\">");
    const char *last_lane = lane, *ops = strstr(svg, "<g class=\"operators\">");
    for (const char *l = lane; l; l = strstr(l + 1, "<g class=\"lane\">")) {
        last_lane = l;
    }
    assert_non_null(io);
    assert_non_null(ops);
    assert_true(io < lane);       /* the inputs/outputs strip above the plots */
    assert_true(ops > last_lane); /* the names in the last lane, under its plot */
    assert_null(strstr(ops, "<g class=\"io\">"));
    if (svg_height(svg) - content_end(svg) >= 30) { /* no blank band at the bottom */
        fail_msg("height %g, content ends at %g", svg_height(svg), content_end(svg));
    }
    free(svg);
    tether_plan_close(&plan);
    /* the same problem in smaller pools: the demand picture */
    tether_plan_problem_clear_pools(&p);
    pool.capacity = 600;
    pool2.capacity = 400;
    assert_int_equal(tether_plan_problem_add_pool(&p, &pool), 0);
    assert_int_equal(tether_plan_problem_add_pool(&p, &pool2), 0);
    assert_int_not_equal(tether_plan_run(&p, &o, &plan), 0);
    assert_int_equal(tether_plan_problem_to_svg(&p, "t1 <fits> nowhere", &svg), 0);
    assert_non_null(strstr(svg, "Memory plan does not fit"));
    assert_non_null(strstr(svg, ">t1 &lt;fits&gt; nowhere</text>"));
    assert_int_equal(count(svg, "<rect class=\"need\""), 4); /* t0 at 0,1; t1 at 1,2 */
    assert_int_equal(count(svg, "<rect class=\"over\""), 1); /* 1200 > 1000 at operator 1 */
    assert_non_null(strstr(svg, "operator 1: 1200 bytes live, 200 more than the pools hold"));
    assert_int_equal(count(svg, "<line class=\"capacity\""), 3); /* sram, dram, their sum */
    assert_non_null(strstr(svg, "all pools: 1000"));
    assert_int_equal(count(svg, "<rect class=\"iobuf\""), 2);
    assert_int_equal(count(svg, "<text class=\"op\""), 3);
    /* a legend, and the tensors by name: on their segments and listed at the peak */
    assert_non_null(strstr(svg, "<g class=\"legend\">"));
    assert_non_null(strstr(svg, ">a pool's capacity</text>"));
    assert_non_null(strstr(svg, ">more live than the pools hold</text>"));
    assert_non_null(strstr(svg, ">live at the peak, operator 1</text>"));
    assert_non_null(strstr(svg, "<text class=\"tensor\""));
    assert_non_null(strstr(svg, ">t0: 600 bytes</text>"));
    assert_non_null(strstr(svg, ">t1: 600 bytes</text>"));
    assert_true(count(svg, "<text class=\"label\"") >= 2);
    assert_true(strstr(svg, "<g class=\"io\">") < strstr(svg, "<g class=\"operators\">"));
    if (svg_height(svg) - content_end(svg) >= 30) {
        fail_msg("height %g, content ends at %g", svg_height(svg), content_end(svg));
    }
    char path[600];
    path_in_tmp(path, sizeof(path), "nofit-unit.svg");
    write_text(path, svg);
    free(svg);
    tether_plan_problem_close(&p);
}

static void test_report(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_options o;
    load_example(&p, &o);
    tether_plan plan;
    assert_int_equal(tether_plan_run(&p, &o, &plan), 0);
    tether_plan_summary rows[TETHER_PLAN_ALGORITHM_COUNT];
    int n = tether_plan_compare(&p, &o, rows, TETHER_PLAN_ALGORITHM_COUNT);
    assert_int_equal(n, TETHER_PLAN_ALGORITHM_COUNT - 1);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(tether_plan_report(f, &p, &plan, rows, n), 0);
    fclose(f);
    char head[128];
    snprintf(head, sizeof(head), "plan: greedy-size, %lld bytes in total, lower bound %lld",
             (long long)plan.total_bytes, (long long)plan.lower_bound);
    assert_non_null(strstr(buf, head));
    for (int a = 0; a < TETHER_PLAN_BEST; a++) {
        assert_non_null(strstr(buf, tether_plan_algorithm_name((tether_plan_algorithm)a)));
    }
    assert_non_null(strstr(buf, "<- chosen"));
    assert_non_null(strstr(buf, "one candidate pool")); /* exact declines multi-pool sets */
    assert_non_null(strstr(buf, "left to the caller: in"));
    assert_non_null(strstr(buf, "fallback: texture buffer 'too_wide'"));
    assert_non_null(strstr(buf, "texel area"));
    assert_non_null(strstr(buf, "sram"));
    free(buf);
    tether_plan_close(&plan);
    tether_plan_problem_close(&p);
}

/* Runs tether_cmd_plan_buffers with stdout/stderr captured into files. */
static int run_cli(char **out, char **err, int argc, const char **argv) {
    char opath[600], epath[600];
    path_in_tmp(opath, sizeof(opath), "stdout.txt");
    path_in_tmp(epath, sizeof(epath), "stderr.txt");
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    int fo = open(opath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int fe = open(epath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(so >= 0 && se >= 0 && fo >= 0 && fe >= 0);
    dup2(fo, 1);
    dup2(fe, 2);
    int code = tether_cmd_plan_buffers(argc, (char **)argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    close(fo);
    close(fe);
    *out = read_text(opath);
    *err = read_text(epath);
    return code;
}

static void expect_cli_error(int want_code, const char *needle, int argc, const char **argv) {
    char *out, *err;
    int code = run_cli(&out, &err, argc, argv);
    if (code != want_code || strstr(err, needle) == NULL) {
        fail_msg("exit %d (want %d), stderr: %s", code, want_code, err);
    }
    assert_int_equal(count(err, "\n"), 1); /* exactly one line */
    assert_true(strncmp(err, "tether plan-buffers: ", 21) == 0);
    free(out);
    free(err);
}

static void test_cli(void **state) {
    (void)state;
    char file[600], svg[600], bad[600];
    path_in_tmp(file, sizeof(file), "buffers.json");
    path_in_tmp(svg, sizeof(svg), "cli.svg");
    path_in_tmp(bad, sizeof(bad), "bad.json");
    write_text(file, example_json);
    write_text(bad, "{\"buffers\": [{\"name\": \"a\"}]}");

    char *out, *err;
    const char *json_args[] = {"plan-buffers", file,    "--planner", "shared-objects",
                               "--json",       "--svg", svg};
    assert_int_equal(run_cli(&out, &err, 7, json_args), 0);
    char said[700];
    snprintf(said, sizeof(said), "wrote %s\n", svg); /* on stderr: stdout is the JSON */
    assert_string_equal(err, said);
    cJSON *root = cJSON_Parse(out);
    assert_non_null(root);
    assert_string_equal(cJSON_GetObjectItem(root, "algorithm")->valuestring, "shared-objects");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "buffers")), 8);
    cJSON_Delete(root);
    free(out);
    free(err);
    char *pic = read_text(svg);
    assert_non_null(pic);
    assert_int_equal(count(pic, "<rect class=\"buf\""), 7); /* 8 buffers, input not planned */
    free(pic);

    const char *report_args[] = {"plan-buffers",
                                 file,
                                 "--pool",
                                 "sram:global:8K",
                                 "--pool",
                                 "dram:global:unbounded",
                                 "--pool",
                                 "gpu:texture:unbounded:16x16",
                                 "--planner=best",
                                 "--budget",
                                 "50",
                                 "--seed",
                                 "3"};
    assert_int_equal(run_cli(&out, &err, 13, report_args), 0);
    assert_non_null(strstr(out, "plan: "));
    assert_non_null(strstr(out, "8192")); /* --pool replaced the file's sram (4096) */
    assert_non_null(strstr(out, "device limit 16x16"));
    assert_non_null(strstr(out, "fallback: texture buffer 'tex'")); /* 32 wide > 16 */
    assert_non_null(strstr(out, "greedy-conflicts"));
    free(out);
    free(err);

    char jpath[600], jarg[620];
    path_in_tmp(jpath, sizeof(jpath), "plan.json");
    snprintf(jarg, sizeof(jarg), "--json=%s", jpath);
    const char *json_file[] = {"plan-buffers", file, jarg};
    assert_int_equal(run_cli(&out, &err, 3, json_file), 0);
    assert_non_null(strstr(out, "plan: greedy-size")); /* the report, from the file's options */
    free(out);
    free(err);
    char *jtext = read_text(jpath);
    assert_non_null(jtext);
    root = cJSON_Parse(jtext);
    assert_non_null(root);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "buffers")), 8);
    cJSON_Delete(root);
    free(jtext);

    const char *help[] = {"plan-buffers", "--help"};
    assert_int_equal(run_cli(&out, &err, 2, help), 0);
    assert_non_null(strstr(out, "usage: tether plan-buffers"));
    free(out);
    free(err);

    const char *none[] = {"plan-buffers"};
    expect_cli_error(2, "missing the buffer-list JSON file", 1, none);
    const char *missing[] = {"plan-buffers", "/nonexistent/dir/x.json"};
    expect_cli_error(2, "cannot open", 2, missing);
    const char *badfile[] = {"plan-buffers", bad};
    expect_cli_error(2, "\"first\" and \"last\" are required", 2, badfile);
    const char *unknown[] = {"plan-buffers", file, "--frobnicate"};
    expect_cli_error(2, "unknown option '--frobnicate'", 3, unknown);
    const char *bogus[] = {"plan-buffers", file, "--planner", "bogus"};
    expect_cli_error(2, "unknown planner 'bogus'", 4, bogus);
    const char *novalue[] = {"plan-buffers", file, "--svg"};
    expect_cli_error(2, "--svg needs a value", 3, novalue);
    const char *two[] = {"plan-buffers", file, file};
    expect_cli_error(2, "unexpected argument", 3, two);
    const char *badpool[] = {"plan-buffers", file, "--pool", "sram:global"};
    expect_cli_error(2, "followed by :capacity", 4, badpool);
    const char *budget[] = {"plan-buffers", file, "--budget", "-4"};
    expect_cli_error(2, "--budget '-4'", 4, budget);
    /* the file's buffers name pools that the replacement set lacks */
    const char *nopool[] = {"plan-buffers", file, "--pool", "tiny:global:64"};
    expect_cli_error(2, "lists pool 'sram', which is not declared", 4, nopool);
    /* does not fit: exit 1, the reason names the buffer */
    char small[600];
    path_in_tmp(small, sizeof(small), "small.json");
    write_text(small, "{\"buffers\": [{\"name\": \"huge\", \"size\": 5000, \"first\": 0, "
                      "\"last\": 1}]}");
    char svg2[600];
    path_in_tmp(svg2, sizeof(svg2), "nofit.svg");
    const char *nofit[] = {"plan-buffers", small, "--pool", "sram:global:4K", "--svg", svg2};
    expect_cli_error(1, "buffer 'huge' (5000 bytes", 6, nofit);
    /* ... and its picture says why: the demand over the pool's capacity */
    static char text[1 << 16];
    FILE *f = fopen(svg2, "r");
    assert_non_null(f);
    text[fread(text, 1, sizeof(text) - 1, f)] = 0;
    fclose(f);
    assert_non_null(strstr(text, "Memory plan does not fit"));
    assert_non_null(strstr(text, "buffer &apos;huge&apos; (5000 bytes"));
    assert_int_equal(count(text, "<rect class=\"need\""), 2); /* live at operators 0 and 1 */
    assert_int_equal(count(text, "<rect class=\"over\""), 2);
    assert_non_null(strstr(text, "pool sram: 4096"));
    unlink(svg2);
}

static void test_plan_cli_for_models(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_options o;
    load_example(&p, &o);
    char *argv[] = {"plan", "model.onnx", "--json"};
    fflush(stderr);
    int se = dup(2);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 2);
    int code = tether_plan_cli("tether plan", &p, 3, argv, 1); /* positional: rejected */
    dup2(se, 2);
    close(se);
    close(devnull);
    assert_int_equal(code, 2);
    tether_plan_problem_close(&p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_input_format),
        cmocka_unit_test(test_input_rejects),
        cmocka_unit_test(test_input_mutations),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_plan_json),
        cmocka_unit_test(test_svg),
        cmocka_unit_test(test_svg_annotations),
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_plan_cli_for_models),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
