package io.kvrouter.cluster;

import static io.kvrouter.cluster.TestCluster.join;
import static io.kvrouter.cluster.TestCluster.worker;

/** Picks a model whose admission actor sharding placed on a given node. */
final class Hosting {
  private Hosting() {}

  /**
   * Registers {@code workers} through {@code via} for models {@code prefix-0}, {@code prefix-1}, ... until one is
   * hosted on {@code host} (at most 60 tries), deregistering the others; returns that model's name.
   */
  static String modelHostedOn(TestRegion.Node host, TestRegion.Node via, String prefix,
      String... workers) {
    for (int i = 0; i < 60; i++) {
      String model = prefix + "-" + i;
      for (String id : workers) {
        join(via.client(model).register(worker(id), null));
      }
      ModelStateReport state = join(via.client(model).state(null));
      if (state.hostNode().equals(host.address().toString())) {
        return model;
      }
      for (String id : workers) {
        join(via.client(model).deregister(id, null));
      }
    }
    throw new AssertionError("no model of 60 was hosted on " + host);
  }
}
