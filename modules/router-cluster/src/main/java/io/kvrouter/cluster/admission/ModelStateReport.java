package io.kvrouter.cluster.admission;

import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.replication.Staleness;

/**
 * A model's state as one node reports it: the admission actor's snapshot, the address of the node hosting the actor,
 * this node's region, and how far behind this node's copy is ({@code hostNode} is this node: no lag).
 */
public record ModelStateReport(ModelSnapshot snapshot, String hostNode, String region, Staleness staleness) {}
