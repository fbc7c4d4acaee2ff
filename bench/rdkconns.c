/* Produce throughput over many producer connections with librdkafka, so that a Python
 * client is not what the figure measures (bench/throughput.py --producers builds and
 * runs it, beside rdkperf and against the same librdkafka).
 *
 *   rdkconns BOOTSTRAP TOPIC PARTITIONS PRODUCERS N SIZE
 *
 * PRODUCERS producer instances (rd_kafka_t), each with its own connection to the
 * broker: acks=1, linger 5 ms, 1 MB batches, no compression, as rdkperf's produce.
 * Each first delivers one record (connections and metadata are not timed). Then 4
 * threads, each owning a share of the producers, hand them N records of SIZE bytes in
 * turn (producer i writes partition i mod PARTITIONS), and every delivery report is
 * awaited. Prints one line, as rdkperf:
 *   "produce <msg/s> msg/s <MB/s> MB/s errors=<n> producers=<PRODUCERS>"
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <librdkafka/rdkafka.h>

#define THREADS 4

static const char *topic;
static int parts, producers, size;
static long per_producer;
static rd_kafka_t **rks;
static volatile long errors;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void set(rd_kafka_conf_t *c, const char *k, const char *v) {
    char err[512];
    if (rd_kafka_conf_set(c, k, v, err, sizeof err) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "%s: %s\n", k, err);
        exit(2);
    }
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk; (void)opaque;
    if (m->err) __sync_fetch_and_add(&errors, 1);
}

static void produce_one(rd_kafka_t *rk, int partition, const char *buf) {
    while (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
                             RD_KAFKA_V_VALUE((void *)buf, (size_t)size),
                             RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END))
        rd_kafka_poll(rk, 1);               /* the queue is full: wait for deliveries */
}

/* Thread t drives producers t, t + THREADS, ...: 100 records to each in turn. */
static void *drive(void *arg) {
    int t = (int)(long)arg;
    char *buf = calloc(1, (size_t)size);
    long *left = calloc((size_t)producers, sizeof *left);
    int active = 0;
    for (int i = t; i < producers; i += THREADS) { left[i] = per_producer; active++; }
    while (active > 0) {
        for (int i = t; i < producers; i += THREADS) {
            if (left[i] == 0) continue;
            long n = left[i] < 100 ? left[i] : 100;
            for (long k = 0; k < n; k++) produce_one(rks[i], i % parts, buf);
            left[i] -= n;
            if (left[i] == 0) active--;
            rd_kafka_poll(rks[i], 0);
        }
    }
    for (int i = t; i < producers; i += THREADS)
        if (rd_kafka_flush(rks[i], 120000) != RD_KAFKA_RESP_ERR_NO_ERROR)
            __sync_fetch_and_add(&errors, rd_kafka_outq_len(rks[i]));
    free(left);
    free(buf);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: rdkconns BOOTSTRAP TOPIC PARTITIONS PRODUCERS N SIZE\n");
        return 2;
    }
    const char *bs = argv[1];
    topic = argv[2];
    parts = atoi(argv[3]);
    producers = atoi(argv[4]);
    long n = atol(argv[5]);
    size = atoi(argv[6]);
    if (parts < 1 || producers < 1 || size < 1 || n < producers) {
        fprintf(stderr, "rdkconns: bad arguments\n");
        return 2;
    }
    per_producer = n / producers;
    char err[512];
    rks = calloc((size_t)producers, sizeof *rks);
    char *buf = calloc(1, (size_t)size);
    for (int i = 0; i < producers; i++) {
        rd_kafka_conf_t *c = rd_kafka_conf_new();
        set(c, "bootstrap.servers", bs);
        set(c, "acks", "1");
        set(c, "linger.ms", "5");
        set(c, "batch.size", "1000000");
        set(c, "compression.type", "none");
        set(c, "queue.buffering.max.kbytes", "8192");   /* 500 producers: bounded memory */
        rd_kafka_conf_set_dr_msg_cb(c, dr_cb);
        rks[i] = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof err);
        if (!rks[i]) { fprintf(stderr, "%s\n", err); return 2; }
        produce_one(rks[i], i % parts, buf);
    }
    for (int i = 0; i < producers; i++)
        if (rd_kafka_flush(rks[i], 60000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
            fprintf(stderr, "rdkconns: producer %d did not deliver its first record\n", i);
            return 1;
        }
    errors = 0;
    double t0 = now_s();
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, drive, (void *)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    double dt = now_s() - t0;
    long total = per_producer * producers;
    printf("produce %.0f msg/s %.1f MB/s errors=%ld producers=%d\n", total / dt,
           (double)total * size / dt / 1e6, errors, producers);
    for (int i = 0; i < producers; i++) rd_kafka_destroy(rks[i]);
    free(rks);
    free(buf);
    return 0;
}
