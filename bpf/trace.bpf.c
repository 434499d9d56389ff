// SPDX-License-Identifier: GPL-2.0
//
// jitterlab's BPF back end of `run --trace` (docs/tracing.md, "Back ends").
//
// One program per tracepoint the tracefs back end enables (src/trace/decode.rs,
// REQUIRED_EVENTS and the optional irq_vectors / nmi events). Each program keeps to the
// CPUs being traced (the `traced_cpus` map, the tracefs back end's tracing_cpumask), applies
// the same filters as the tracefs instance (timer starts of the followed threads only; wakeups
// of the followed threads and of real-time tasks only; timer expiries of the measuring
// threads' timer callbacks only) and writes one compact binary record to the `events` ring
// buffer. src/trace/bpf/record.rs decodes these records into the same events the tracefs
// reader decodes, so the split and the explanations are computed by the same code for both
// back ends.
//
// The kernel types are declared here with only the fields read, marked
// preserve_access_index: clang records every field access as a CO-RE relocation, and the
// loader (aya) resolves the offsets against the running kernel's BTF. No vmlinux.h is needed.
//
// Built by bpf/build.sh; the object bpf/trace.bpf.o is checked in and rebuilt by CI
// (ci/bpf-object.sh), which fails if it differs from the checked-in one.

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

typedef _Bool bool;

// ---- kernel types, only the fields read (CO-RE) ----

struct thread_info {
	__u32 cpu;
} __attribute__((preserve_access_index));

struct task_struct {
	struct thread_info thread_info;
	int prio;
	int pid;
	char comm[16];
} __attribute__((preserve_access_index));

// Kernels before 5.16 keep the CPU in task_struct.
struct task_struct___cpu_in_task {
	unsigned int cpu;
} __attribute__((preserve_access_index));

struct timerqueue_node {
	__s64 expires;
} __attribute__((preserve_access_index));

struct hrtimer {
	struct timerqueue_node node;
	__s64 _softexpires;
	void *function;
} __attribute__((preserve_access_index));

struct irqaction {
	const char *name;
} __attribute__((preserve_access_index));

// ---- the records (src/trace/bpf/record.rs decodes them; keep both in step) ----

enum jl_kind {
	JL_HRTIMER_START = 1,
	JL_HRTIMER_EXPIRE = 2,
	JL_WAKING = 3,
	JL_SWITCH = 4,
	JL_IRQ_ENTRY = 5,
	JL_IRQ_EXIT = 6,
	JL_SOFTIRQ_ENTRY = 7,
	JL_SOFTIRQ_EXIT = 8,
	JL_VECTOR_ENTRY = 9,
	JL_VECTOR_EXIT = 10,
	JL_NMI = 11,
	// Records this CPU could not write (the ring buffer was full) before this one.
	JL_LOST = 12,
};

// 16 bytes before every payload: CLOCK_MONOTONIC time, the current task (the tracefs
// common_pid), the CPU and what the record is.
struct jl_header {
	__u64 ts;
	__s32 pid;
	__u16 cpu;
	__u16 kind;
};

struct jl_task {
	__s32 pid;
	__s32 prio;
	char comm[16];
};

struct jl_hrtimer_start {
	struct jl_header h;
	__u64 hrtimer;
	__s64 expires;
	__s64 softexpires;
};

struct jl_hrtimer_expire {
	struct jl_header h;
	__u64 hrtimer;
	__s64 now;
};

struct jl_waking {
	struct jl_header h;
	struct jl_task task;
	__s32 target_cpu;
	__u32 pad;
};

struct jl_switch {
	struct jl_header h;
	struct jl_task prev;
	struct jl_task next;
};

#define JL_IRQ_NAME 32

struct jl_irq {
	struct jl_header h;
	__s32 irq;
	char name[JL_IRQ_NAME];
	__u32 pad;
};

// Softirq vector, interrupt-vector index (JL_VECTOR_*), or nothing.
struct jl_small {
	struct jl_header h;
	__u32 value;
	__u32 pad;
};

// NMI length, or the number of records lost.
struct jl_count {
	struct jl_header h;
	__u64 count;
};

// ---- maps ----

#define JL_MAX_FUNCTIONS 8

// What user space sets once the measuring threads' ids are known (all 64-bit words, so that
// user space writes it as an array of u64 on any byte order).
struct jl_config {
	// Nonzero: timer starts and wakeups are kept for the threads in `tids` only.
	__u64 filter_tids;
	// Timer expiries are kept for these callbacks only (none: all are kept).
	__u64 n_functions;
	__u64 functions[JL_MAX_FUNCTIONS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jl_config);
} config SEC(".maps");

// One entry per possible CPU: nonzero when traced. The loader sizes it.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} traced_cpus SEC(".maps");

// The followed threads (measuring threads and IPC senders). The loader sizes it.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __s32);
	__type(value, __u32);
} tids SEC(".maps");

// Per CPU: records lost in all (for run.json) and lost since the last record written (sent
// ahead of the next record, as the tracefs reader marks a page with missed events).
struct jl_lost {
	__u64 total;
	__u64 pending;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jl_lost);
} lost SEC(".maps");

// The records. The loader sizes it (a power of two number of pages).
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

// ---- helpers ----
//
// Records are submitted with BPF_RB_NO_WAKEUP: the reader polls the ring buffer on its own
// schedule (src/trace/bpf/mod.rs), so no program needs to wake it, which the kernel would do
// through an irq_work (an interrupt on the traced CPU) after each drain.

static __always_inline bool cpu_traced(__u32 cpu)
{
	__u32 *on = bpf_map_lookup_elem(&traced_cpus, &cpu);
	return on && *on;
}

static __always_inline struct jl_config *get_config(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&config, &zero);
}

static __always_inline bool followed(__s32 tid)
{
	return bpf_map_lookup_elem(&tids, &tid) != 0;
}

// Reserves a record of `size` bytes and fills its header, or counts it lost. A pending count
// of lost records is written first, so that user space knows where the trace has a hole.
static __always_inline void *reserve(__u64 size, __u16 kind, __u32 cpu)
{
	__u32 zero = 0;
	struct jl_lost *l = bpf_map_lookup_elem(&lost, &zero);
	__u64 ts = bpf_ktime_get_ns();
	__s32 pid = (__s32)bpf_get_current_pid_tgid();
	if (l && l->pending) {
		struct jl_count *c = bpf_ringbuf_reserve(&events, sizeof(*c), 0);
		if (!c) {
			l->total++;
			l->pending++;
			return 0;
		}
		c->h.ts = ts;
		c->h.pid = pid;
		c->h.cpu = cpu;
		c->h.kind = JL_LOST;
		c->count = l->pending;
		bpf_ringbuf_submit(c, BPF_RB_NO_WAKEUP);
		l->pending = 0;
	}
	struct jl_header *h = bpf_ringbuf_reserve(&events, size, 0);
	if (!h) {
		if (l) {
			l->total++;
			l->pending++;
		}
		return 0;
	}
	h->ts = ts;
	h->pid = pid;
	h->cpu = cpu;
	h->kind = kind;
	return h;
}

// tp_btf arguments are typed kernel pointers: fields are read with plain loads (CO-RE
// relocated), no bpf_probe_read_kernel call per field.
static __always_inline void read_task(struct jl_task *t, struct task_struct *p)
{
	t->pid = p->pid;
	t->prio = p->prio;
	__builtin_memcpy(t->comm, p->comm, sizeof(t->comm));
}

static __always_inline __s32 task_cpu(struct task_struct *p)
{
	if (bpf_core_field_exists(p->thread_info.cpu))
		return BPF_CORE_READ(p, thread_info.cpu);
	struct task_struct___cpu_in_task *old = (void *)p;
	if (bpf_core_field_exists(old->cpu))
		return BPF_CORE_READ(old, cpu);
	return -1;
}

// ---- programs ----

SEC("tp_btf/hrtimer_start")
int BPF_PROG(hrtimer_start, struct hrtimer *timer)
{
	__u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_traced(cpu))
		return 0;
	struct jl_config *c = get_config();
	if (c && c->filter_tids && !followed((__s32)bpf_get_current_pid_tgid()))
		return 0;
	struct jl_hrtimer_start *r = reserve(sizeof(*r), JL_HRTIMER_START, cpu);
	if (!r)
		return 0;
	r->hrtimer = (__u64)timer;
	r->expires = timer->node.expires;
	r->softexpires = timer->_softexpires;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(hrtimer_expire_entry, struct hrtimer *timer, __s64 *now)
{
	__u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_traced(cpu))
		return 0;
	struct jl_config *c = get_config();
	if (c && c->n_functions) {
		__u64 f = (__u64)timer->function;
		bool keep = 0;
		for (int i = 0; i < JL_MAX_FUNCTIONS; i++) {
			if (i < c->n_functions && c->functions[i] == f)
				keep = 1;
		}
		if (!keep)
			return 0;
	}
	struct jl_hrtimer_expire *r = reserve(sizeof(*r), JL_HRTIMER_EXPIRE, cpu);
	if (!r)
		return 0;
	r->hrtimer = (__u64)timer;
	__s64 t = 0;
	bpf_probe_read_kernel(&t, sizeof(t), now);
	r->now = t;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(sched_waking, struct task_struct *p)
{
	__u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_traced(cpu))
		return 0;
	struct jl_config *c = get_config();
	// As the tracefs filter `pid == <followed> || prio < 100`.
	if (c && c->filter_tids && p->prio >= 100 && !followed(p->pid))
		return 0;
	struct jl_waking *r = reserve(sizeof(*r), JL_WAKING, cpu);
	if (!r)
		return 0;
	read_task(&r->task, p);
	r->target_cpu = task_cpu(p);
	r->pad = 0;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_traced(cpu))
		return 0;
	struct jl_switch *r = reserve(sizeof(*r), JL_SWITCH, cpu);
	if (!r)
		return 0;
	read_task(&r->prev, prev);
	read_task(&r->next, next);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(irq_handler_entry, int irq, struct irqaction *action)
{
	__u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_traced(cpu))
		return 0;
	struct jl_irq *r = reserve(sizeof(*r), JL_IRQ_ENTRY, cpu);
	if (!r)
		return 0;
	r->irq = irq;
	r->pad = 0;
	const char *name = action->name;
	if (bpf_probe_read_kernel_str(r->name, sizeof(r->name), name) < 0)
		r->name[0] = 0;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(irq_handler_exit, int irq)
{
	__u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_traced(cpu))
		return 0;
	struct jl_small *r = reserve(sizeof(*r), JL_IRQ_EXIT, cpu);
	if (!r)
		return 0;
	r->value = (__u32)irq;
	r->pad = 0;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

static __always_inline int small(__u16 kind, __u32 value)
{
	__u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_traced(cpu))
		return 0;
	struct jl_small *r = reserve(sizeof(*r), kind, cpu);
	if (!r)
		return 0;
	r->value = value;
	r->pad = 0;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(softirq_entry, unsigned int vec)
{
	return small(JL_SOFTIRQ_ENTRY, vec);
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(softirq_exit, unsigned int vec)
{
	return small(JL_SOFTIRQ_EXIT, vec);
}

SEC("tp_btf/nmi_handler")
int BPF_PROG(nmi_handler, void *handler, __s64 delta_ns)
{
	__u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_traced(cpu))
		return 0;
	struct jl_count *r = reserve(sizeof(*r), JL_NMI, cpu);
	if (!r)
		return 0;
	r->count = delta_ns > 0 ? (__u64)delta_ns : 0;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

// The architecture's interrupt vectors (x86's irq_vectors system): one program per entry and
// exit, the index in the record is the vector's place in VECTORS of src/trace/bpf/mod.rs.
// A kernel without one of them (another architecture, another configuration) is fine: the
// loader attaches those whose tracepoint exists.
#define VECTOR(index, name)                                          \
	SEC("tp_btf/" #name "_entry")                                \
	int BPF_PROG(v_##name##_entry) { return small(JL_VECTOR_ENTRY, index); } \
	SEC("tp_btf/" #name "_exit")                                 \
	int BPF_PROG(v_##name##_exit) { return small(JL_VECTOR_EXIT, index); }

VECTOR(0, call_function)
VECTOR(1, call_function_single)
VECTOR(2, deferred_error_apic)
VECTOR(3, error_apic)
VECTOR(4, irq_work)
VECTOR(5, local_timer)
VECTOR(6, reschedule)
VECTOR(7, spurious_apic)
VECTOR(8, thermal_apic)
VECTOR(9, threshold_apic)
VECTOR(10, x86_platform_ipi)

char LICENSE[] SEC("license") = "GPL";
