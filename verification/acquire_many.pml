/*
 * acquire_many: two clients, two keys, every key taken in the one sorted order (property 4).
 *
 * acquiring/group_plan.sorted_lock_ids fixes the order; acquiring/group_acquirer writes a chunk of
 * keys in one transaction (all or nothing), or, on a store without transactions, key by key in that
 * order (GroupAcquisition.attempted), holding the keys it has while it waits for the next. A holder
 * that waits keeps its keys alive (its heartbeat), so nothing frees them but its release: waiting in
 * a cycle would be a deadlock. pan reports one as an invalid end state; with BUG_UNSORTED the second
 * client takes the keys in the other order, and pan must find the deadlock.
 */

#define NOBODY 255
#define KEYS 2
#ifndef ROUNDS
#define ROUNDS 2
#endif

byte holder[KEYS] = NOBODY;

/* The key a client takes i-th (group_plan.sorted_lock_ids). */
#ifdef BUG_UNSORTED
#define key_at(me, i) (me == 0 -> i : KEYS - 1 - i)
#else
#define key_at(me, i) (i)
#endif

proctype client(byte me) {
    byte round = 0;
    byte i;

    do
    :: round < ROUNDS ->
        round++;
        if
        :: atomic {                      /* one TransactWriteItems: every key free, or none taken */
               holder[0] == NOBODY && holder[1] == NOBODY -> holder[0] = me; holder[1] = me
           }
        :: i = 0;                        /* without transactions: one conditional write per key, in order */
           do
           :: i < KEYS ->
               atomic { holder[key_at(me, i)] == NOBODY -> holder[key_at(me, i)] = me };
               i++
           :: else -> break
           od;
           i = 0
        fi;
        /* held: every key is ours */
        assert(holder[0] == me && holder[1] == me);
        atomic { holder[0] = NOBODY; holder[1] = NOBODY }   /* release_all */
    :: else -> break
    od
}

init {
    atomic { run client(0); run client(1) }
}
