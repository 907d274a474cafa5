package io.kvrouter.core.admission;

import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.model.Rank;

/**
 * A rank's booked load after a mutation, as of the admission state's epoch: a node relaying the answer writes it into
 * the cell of its current view when that view has the same epoch (the cell keeps the newer record by seq).
 */
public record LoadUpdate(long epoch, Rank rank, RankLoad load) {}
