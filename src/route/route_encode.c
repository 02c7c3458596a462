/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON of TopicRouteData and BrokerData as fastjson 1.2.83 writes them
 * (proto/requests.md §2.8, proto/route.md §9): fields in alphabetical order, null fields omitted.
 *  - DEFAULT mode: bare numeric map keys, raw UTF-8, '/' unescaped.
 *  - STANDARD mode (BrowserCompatible, QuoteFieldNames, MapSortField):
 *    quoted keys, maps sorted (numerically for Long/Integer keys), non-ASCII
 *    as \uXXXX, '/' as "\/", longs beyond +-(2^53-1) as strings.
 * Maps are written sorted in both modes: Java's hash order is ascending for
 * small ids anyway, and no reader depends on it. Lists (queueDatas,
 * brokerDatas) follow the table's insertion order; clients sort them.
 * Also pickupTopicRouteData's selection (proto/route.md §6) and the zone filter of
 * ZoneRouteRPCHook (proto/requests.md §2.8), which work on the encoded view. Loop thread only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nsrv/json.h"
#include "route_int.h"

/* Number.MAX_SAFE_INTEGER: fastjson's BrowserCompatible quotes longs beyond it. */
#define JS_SAFE_INT 9007199254740991LL

/* Short views are kept on the stack; a topic on more broker groups allocates. */
#define VIEW_STACK 16

static nsrv_json_esc_t esc_of(nsrv_route_json_t mode) {
    return mode == NSRV_ROUTE_JSON_STANDARD ? NSRV_JSON_ESC_BROWSER : NSRV_JSON_ESC_DEFAULT;
}

void nsrv__route_write_str(nsrv_buf_t *out, const char *s, nsrv_route_json_t mode) {
    nsrv_json_write_str(out, s, strlen(s), esc_of(mode));
}

static void write_key_str(nsrv_buf_t *out, const char *s, nsrv_route_json_t mode) {
    nsrv__route_write_str(out, s, mode);
    nsrv_buf_append_ch(out, ':');
}

/* A Long/Integer map key: bare in default mode, quoted in standard mode. */
static void write_key_num(nsrv_buf_t *out, int64_t v, nsrv_route_json_t mode) {
    if (mode == NSRV_ROUTE_JSON_STANDARD) {
        nsrv_buf_append_ch(out, '"');
        nsrv_buf_append_i64(out, v);
        nsrv_buf_append(out, "\":", 2);
    } else {
        nsrv_buf_append_i64(out, v);
        nsrv_buf_append_ch(out, ':');
    }
}

static void write_long(nsrv_buf_t *out, int64_t v, nsrv_route_json_t mode) {
    bool quote = mode == NSRV_ROUTE_JSON_STANDARD && (v > JS_SAFE_INT || v < -JS_SAFE_INT);
    if (quote)
        nsrv_buf_append_ch(out, '"');
    nsrv_buf_append_i64(out, v);
    if (quote)
        nsrv_buf_append_ch(out, '"');
}

static void write_addr_entry(nsrv_buf_t *out, bool *first, int64_t id, const char *addr,
                             nsrv_route_json_t mode) {
    nsrv_buf_append_sep(out, first);
    write_key_num(out, id, mode);
    nsrv__route_write_str(out, addr, mode);
}

/*
 * brokerAddrs, sorted by id. With rewrite (acting master, proto/route.md §6 step 6)
 * the smallest id's address is shown under 0; the table is not changed.
 */
void nsrv__route_write_addrs(nsrv_buf_t *out, const rt_bname_t *b, nsrv_route_json_t mode,
                             bool rewrite) {
    bool first = true;
    nsrv_buf_append_ch(out, '{');
    if (!rewrite || b->n_addrs == 0) {
        for (size_t i = 0; i < b->n_addrs; i++)
            write_addr_entry(out, &first, b->addrs[i].id, b->addrs[i].addr, mode);
    } else {
        /* addrs[0] moves to key 0; the others keep their order around it. */
        size_t i = 1;
        for (; i < b->n_addrs && b->addrs[i].id < 0; i++)
            write_addr_entry(out, &first, b->addrs[i].id, b->addrs[i].addr, mode);
        write_addr_entry(out, &first, 0, b->addrs[0].addr, mode);
        for (; i < b->n_addrs; i++)
            write_addr_entry(out, &first, b->addrs[i].id, b->addrs[i].addr, mode);
    }
    nsrv_buf_append_ch(out, '}');
}

void nsrv__route_write_bd(nsrv_buf_t *out, const rt_bname_t *b, nsrv_route_json_t mode,
                          bool rewrite) {
    nsrv_buf_append_c(out, "{\"brokerAddrs\":");
    nsrv__route_write_addrs(out, b, mode, rewrite);
    nsrv_buf_append_c(out, ",\"brokerName\":");
    nsrv__route_write_str(out, b->name, mode);
    nsrv_buf_append_c(out, ",\"cluster\":");
    nsrv__route_write_str(out, b->cluster, mode);
    nsrv_buf_append_c(out,
                      b->acting ? ",\"enableActingMaster\":true" : ",\"enableActingMaster\":false");
    if (b->zone) {
        nsrv_buf_append_c(out, ",\"zoneName\":");
        nsrv__route_write_str(out, b->zone, mode);
    }
    nsrv_buf_append_ch(out, '}');
}

static void write_qd(nsrv_buf_t *out, const rt_qd_t *qd, nsrv_route_json_t mode) {
    nsrv_buf_append_c(out, "{\"brokerName\":");
    nsrv__route_write_str(out, qd->bname->name, mode);
    nsrv_buf_printf(out,
                    ",\"perm\":%d,\"readQueueNums\":%d,\"topicSysFlag\":%d,\"writeQueueNums\":%d}",
                    (int)qd->perm, (int)qd->read_queue_nums, (int)qd->topic_sys_flag,
                    (int)qd->write_queue_nums);
}

static void write_mapping(nsrv_buf_t *out, const rt_mapping_t *m, nsrv_route_json_t mode) {
    nsrv_buf_append_c(out, "{\"bname\":");
    nsrv__route_write_str(out, m->bname, mode);
    nsrv_buf_append_c(out, ",\"currIdMap\":{");
    for (size_t i = 0; i < m->n_ids; i++) {
        if (i)
            nsrv_buf_append_ch(out, ',');
        write_key_num(out, m->ids[i].key, mode);
        nsrv_buf_append_i64(out, m->ids[i].val);
    }
    nsrv_buf_append_c(out,
                      m->dirty ? "},\"dirty\":true,\"epoch\":" : "},\"dirty\":false,\"epoch\":");
    write_long(out, m->epoch, mode);
    /* An absent scope keeps the Java field initializer, MixAll.METADATA_SCOPE_GLOBAL. */
    nsrv_buf_append_c(out, ",\"scope\":");
    nsrv__route_write_str(out, m->scope ? m->scope : "__global__", mode);
    if (m->topic) {
        nsrv_buf_append_c(out, ",\"topic\":");
        nsrv__route_write_str(out, m->topic, mode);
    }
    nsrv_buf_printf(out, ",\"totalQueues\":%d}", (int)m->total_queues);
}

typedef struct {
    const rt_bname_t *b;
    const rt_qd_t *qd; /* its QueueData in this topic */
    bool rewrite;      /* acting master: smallest id shown as 0 */
    bool keep;         /* survives the zone filter */
} bd_view_t;

typedef struct {
    const char *addr;
    const rt_filter_t *f;
    size_t idx;
} fs_entry_t;

static int cmp_fs(const void *a, const void *b) {
    const fs_entry_t *x = a, *y = b;
    int c = strcmp(x->addr, y->addr);
    if (c)
        return c;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static bool has_master(const rt_bname_t *b) {
    return b->n_addrs && nsrv__route_bname_addr(b, 0) != NULL;
}

/* Is addr an address of a broker group the zone filter dropped? */
static bool addr_dropped(const bd_view_t *v, size_t nb, const char *addr) {
    for (size_t i = 0; i < nb; i++) {
        if (v[i].keep)
            continue;
        for (size_t j = 0; j < v[i].b->n_addrs; j++) {
            if (strcmp(v[i].b->addrs[j].addr, addr) == 0)
                return true;
        }
    }
    return false;
}

/*
 * filterServerTable: address -> filterServerTable[(cluster, address)] for each
 * address of each BrokerData; addresses without filter servers are null in
 * Java and therefore not written. The zone filter removes the addresses of
 * the groups it dropped.
 */
static void write_filter_servers(const nsrv_route_t *rt, const bd_view_t *v, size_t nb,
                                 nsrv_route_json_t mode, nsrv_buf_t *out) {
    nsrv_buf_append_c(out, ",\"filterServerTable\":{");
    if (!rt->filters) {
        nsrv_buf_append_ch(out, '}');
        return;
    }
    fs_entry_t *e = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < nb; i++) {
        const rt_bname_t *b = v[i].b;
        for (size_t j = 0; j < b->n_addrs; j++) {
            const rt_filter_t *f = nsrv__route_filter_find(rt, b->cluster, b->addrs[j].addr);
            if (!f)
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 8;
                e = nsrv_realloc(e, cap * sizeof e[0]);
            }
            e[n].addr = b->addrs[j].addr;
            e[n].f = f;
            e[n].idx = n;
            n++;
        }
    }
    if (n > 1)
        qsort(e, n, sizeof e[0], cmp_fs);
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n && strcmp(e[i].addr, e[i + 1].addr) == 0)
            continue; /* a HashMap put: the later group's list wins */
        if (addr_dropped(v, nb, e[i].addr))
            continue;
        nsrv_buf_append_sep(out, &first);
        write_key_str(out, e[i].addr, mode);
        nsrv_buf_append_ch(out, '[');
        for (size_t k = 0; k < e[i].f->n; k++) {
            if (k)
                nsrv_buf_append_ch(out, ',');
            nsrv__route_write_str(out, e[i].f->servers[k], mode);
        }
        nsrv_buf_append_ch(out, ']');
    }
    nsrv_free(e);
    nsrv_buf_append_ch(out, '}');
}

/* proto/route.md §6 step 6, on the view: the table keeps its real ids. */
static void apply_acting_master(const rt_topic_t *t, bd_view_t *v, size_t nb) {
    static const char prefix[] = NSRV_ROUTE_SYNC_MEMBER_PREFIX;
    if (strncmp(t->name, prefix, sizeof prefix - 1) == 0)
        return;
    bool need = false;
    for (size_t i = 0; i < nb && !need; i++)
        need = v[i].b->n_addrs && !has_master(v[i].b);
    if (!need)
        return;
    for (size_t i = 0; i < nb; i++) {
        const rt_bname_t *b = v[i].b;
        if (b->n_addrs == 0 || has_master(b) || !b->acting)
            continue;
        /* "The first QueueData with its brokerName": a topic has one per name. */
        if (!(v[i].qd->perm & NSRV_PERM_WRITE))
            v[i].rewrite = true;
    }
}

/* ZoneRouteRPCHook: keep groups without a master ("read from slave") or in the zone. */
static void apply_zone(bd_view_t *v, size_t nb, const char *zone) {
    for (size_t i = 0; i < nb; i++) {
        const rt_bname_t *b = v[i].b;
        bool master = has_master(b) || v[i].rewrite;
        /* Java's equalsIgnoreCase; ASCII case folding only. */
        v[i].keep = !master || (b->zone && strcasecmp(b->zone, zone) == 0);
    }
}

static bool qd_kept(const bd_view_t *v, size_t nb, const rt_qd_t *qd) {
    for (size_t i = 0; i < nb; i++) {
        if (v[i].b == qd->bname)
            return v[i].keep;
    }
    return true; /* no BrokerData, so the zone filter cannot have removed it */
}

int nsrv__route_encode_route(const nsrv_route_t *rt, const rt_topic_t *t, nsrv_route_json_t mode,
                             const char *order_conf, const char *zone, nsrv_buf_t *out) {
    size_t n_qds = nsrv__route_n_qds(rt, t);
    bd_view_t stack_v[VIEW_STACK];
    bd_view_t *v = n_qds <= VIEW_STACK ? stack_v : nsrv_malloc(n_qds * sizeof v[0]);
    size_t nb = 0;
    /* Step 2: a copy of the BrokerData of each broker name that has one. */
    for (size_t i = 0; i < n_qds; i++) {
        const rt_bname_t *b = nsrv__route_qd_at(rt, t, i)->bname;
        if (!b->present)
            continue;
        v[nb].b = b;
        v[nb].qd = nsrv__route_qd_at(rt, t, i);
        v[nb].rewrite = false;
        v[nb].keep = true;
        nb++;
    }
    /* Step 4: found means at least one queueData and one brokerData. */
    if (nb == 0) {
        if (v != stack_v)
            nsrv_free(v);
        return -ENOENT;
    }
    if (rt->opts.support_acting_master)
        apply_acting_master(t, v, nb);
    if (zone)
        apply_zone(v, nb, zone);

    nsrv_buf_append_c(out, "{\"brokerDatas\":[");
    bool first = true;
    for (size_t i = 0; i < nb; i++) {
        if (!v[i].keep)
            continue;
        nsrv_buf_append_sep(out, &first);
        nsrv__route_write_bd(out, v[i].b, mode, v[i].rewrite);
    }
    nsrv_buf_append_ch(out, ']');
    write_filter_servers(rt, v, nb, mode, out);
    if (order_conf) {
        nsrv_buf_append_c(out, ",\"orderTopicConf\":");
        nsrv__route_write_str(out, order_conf, mode);
    }
    nsrv_buf_append_c(out, ",\"queueDatas\":[");
    first = true;
    for (size_t i = 0; i < n_qds; i++) {
        if (zone && !qd_kept(v, nb, nsrv__route_qd_at(rt, t, i)))
            continue;
        nsrv_buf_append_sep(out, &first);
        write_qd(out, nsrv__route_qd_at(rt, t, i), mode);
    }
    nsrv_buf_append_ch(out, ']');
    const rt_mtopic_t *mt = nsrv__route_mapping_find(rt, t->name);
    if (mt && mt->n) {
        nsrv_buf_append_c(out, ",\"topicQueueMappingByBroker\":{");
        for (size_t i = 0; i < mt->n; i++) {
            if (i)
                nsrv_buf_append_ch(out, ',');
            write_key_str(out, mt->maps[i].bname, mode);
            write_mapping(out, &mt->maps[i], mode);
        }
        nsrv_buf_append_ch(out, '}');
    }
    nsrv_buf_append_ch(out, '}');
    if (v != stack_v)
        nsrv_free(v);
    return 0;
}
