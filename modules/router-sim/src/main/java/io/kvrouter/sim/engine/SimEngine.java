package io.kvrouter.sim.engine;

import java.util.List;

/** A simulated engine (one worker of the router): one or more data-parallel ranks, dp ranks [0, ranks.size()). */
public record SimEngine(String workerId, List<EngineRank> ranks) {}
