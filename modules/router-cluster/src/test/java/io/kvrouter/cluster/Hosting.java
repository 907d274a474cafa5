package io.kvrouter.cluster;

import io.kvrouter.cluster.admission.ModelAdmission;
import io.kvrouter.cluster.admission.ModelStateReport;
import io.kvrouter.cluster.models.ModelSlot;
import org.apache.pekko.actor.typed.ActorRef;
import static io.kvrouter.cluster.TestCluster.join;
import static io.kvrouter.cluster.TestCluster.worker;

/** Where sharding placed a model's admission actor. */
final class Hosting {
  private Hosting() {}

  /** The model's admission actor while it runs on {@code node}, else null. */
  static ActorRef<ModelAdmission.Command> localAdmission(RouterCluster node, String model) {
    ModelSlot<ModelAdmission.Command> slot = node.slot(model);
    return slot == null ? null : slot.localAdmission();
  }

  static ActorRef<ModelAdmission.Command> localAdmission(TestRegion.Node node, String model) {
    return localAdmission(node.routing(), model);
  }

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
