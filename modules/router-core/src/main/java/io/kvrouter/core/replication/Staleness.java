package io.kvrouter.core.replication;

/**
 * How far behind this node's copy of a model is. {@code seqLag}: the highest seq seen in any message of the current
 * epoch minus the seq applied; {@code ageMillis}: time since the copy last applied anything (0 if never);
 * {@code awaitingSnapshot}: a gap was seen and no full copy has arrived since. On the node hosting the admission
 * actor the caller reports age 0 and lag 0.
 */
public record Staleness(long epoch, long viewVersion, long seq, long seqLag, long ageMillis,
    boolean awaitingSnapshot) {}
