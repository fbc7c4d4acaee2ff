/* End-to-end latency with librdkafka, so that a Python client is not what the figure
 * measures (bench/latency.py builds and runs it).
 *
 *   rdklat BOOTSTRAP TOPIC PARTITIONS RATE SECONDS SIZE LINGER_MS [idempotent|plain]
 *
 * A consumer (its own thread) is assigned every partition at the log end; then a
 * producer (acks=all, up to 5 requests in flight; idempotent -- the default when the
 * argument is left out -- or plain: librdkafka's default producer, which does not keep
 * a core busy as the idempotent one does on librdkafka 2.x) sends RATE records
 * a second of SIZE bytes for SECONDS, paced in 1 ms steps, round-robin over the
 * partitions. Each record starts with its send time (CLOCK_MONOTONIC ns, 8 bytes); the
 * consumer takes receipt - send. The first 10 % are warm-up. Prints one line:
 *   "latency n=<records> p50=<ms> p99=<ms> p999=<ms> max=<ms> errors=<n>"
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <librdkafka/rdkafka.h>

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void set(rd_kafka_conf_t *c, const char *k, const char *v) {
    char err[512];
    if (rd_kafka_conf_set(c, k, v, err, sizeof err) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "%s: %s\n", k, err);
        exit(2);
    }
}

static rd_kafka_t *consumer;
static volatile int stop_consumer;
static volatile long received;
static double *lat_ms;
static long lat_cap;
static volatile long errors;

static void *consume(void *arg) {
    (void)arg;
    while (!stop_consumer) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 50);
        if (!m) continue;
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) errors++;
        } else if (m->len >= 8) {
            int64_t sent;
            memcpy(&sent, m->payload, 8);
            if (received < lat_cap) lat_ms[received] = (now_ns() - sent) / 1e6;
            received++;
        }
        rd_kafka_message_destroy(m);
    }
    return NULL;
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk; (void)opaque;
    if (m->err) errors++;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 8) {
        fprintf(stderr, "usage: rdklat BOOTSTRAP TOPIC PARTITIONS RATE SECONDS SIZE LINGER_MS "
                "[idempotent|plain]\n");
        return 2;
    }
    const char *bs = argv[1], *topic = argv[2];
    int parts = atoi(argv[3]);
    long rate = atol(argv[4]);
    double seconds = atof(argv[5]);
    int size = atoi(argv[6]);
    if (size < 8) size = 8;
    char err[512];

    lat_cap = (long)(rate * seconds) + 1000;
    lat_ms = calloc((size_t)lat_cap, sizeof *lat_ms);

    rd_kafka_conf_t *cc = rd_kafka_conf_new();
    set(cc, "bootstrap.servers", bs);
    set(cc, "group.id", "rdklat");
    set(cc, "enable.auto.commit", "false");
    set(cc, "fetch.wait.max.ms", "100");
    set(cc, "fetch.min.bytes", "1");
    consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cc, err, sizeof err);
    if (!consumer) { fprintf(stderr, "%s\n", err); return 2; }
    rd_kafka_topic_partition_list_t *tps = rd_kafka_topic_partition_list_new(parts);
    for (int p = 0; p < parts; p++)
        rd_kafka_topic_partition_list_add(tps, topic, p)->offset = RD_KAFKA_OFFSET_END;
    rd_kafka_assign(consumer, tps);
    rd_kafka_topic_partition_list_destroy(tps);
    pthread_t th;
    pthread_create(&th, NULL, consume, NULL);

    rd_kafka_conf_t *pc = rd_kafka_conf_new();
    set(pc, "bootstrap.servers", bs);
    set(pc, "acks", "all");
    int idempotent = argc < 9 || strcmp(argv[8], "plain") != 0;
    set(pc, "enable.idempotence", idempotent ? "true" : "false");
    set(pc, "max.in.flight.requests.per.connection", "5");
    set(pc, "linger.ms", argv[7]);
    set(pc, "queue.buffering.max.messages", "1000000");
    rd_kafka_conf_set_dr_msg_cb(pc, dr_cb);
    rd_kafka_t *producer = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof err);
    if (!producer) { fprintf(stderr, "%s\n", err); return 2; }
    char *buf = calloc(1, (size_t)size);
    struct timespec settle = {2, 0};
    nanosleep(&settle, NULL);            /* the consumer's position at the log end */

    int64_t t0 = now_ns(), end = t0 + (int64_t)(seconds * 1e9);
    long sent = 0;
    struct timespec step = {0, 1000000};
    for (int64_t t = now_ns(); t < end; t = now_ns()) {
        long due = (long)((t - t0) / 1e9 * rate);
        while (sent < due) {
            int64_t ts = now_ns();
            memcpy(buf, &ts, 8);
            if (rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(topic),
                                  RD_KAFKA_V_PARTITION((int32_t)(sent % parts)),
                                  RD_KAFKA_V_VALUE(buf, (size_t)size),
                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END)) {
                rd_kafka_poll(producer, 1);
                continue;
            }
            sent++;
        }
        rd_kafka_poll(producer, 0);
        nanosleep(&step, NULL);
    }
    rd_kafka_flush(producer, 30000);
    for (int i = 0; i < 200 && received < sent; i++) {
        struct timespec w = {0, 50000000};
        nanosleep(&w, NULL);
    }
    stop_consumer = 1;
    pthread_join(th, NULL);
    long n = received < lat_cap ? received : lat_cap;
    long skip = n / 10;
    double *v = lat_ms + skip;
    long m = n - skip;
    if (m <= 0) { fprintf(stderr, "no records received (sent %ld)\n", sent); return 1; }
    qsort(v, (size_t)m, sizeof *v, cmp);
    printf("latency n=%ld p50=%.3f p99=%.3f p999=%.3f max=%.3f errors=%ld sent=%ld received=%ld\n",
           m, v[m / 2], v[(long)(m * 0.99)], v[(long)(m * 0.999)], v[m - 1], (long)errors,
           sent, (long)received);
    rd_kafka_consumer_close(consumer);
    rd_kafka_destroy(consumer);
    rd_kafka_destroy(producer);
    return received < sent ? 1 : 0;
}
