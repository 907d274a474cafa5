package io.kvrouter.cluster.testkit;

import io.kvrouter.cluster.admission.ModelAdmission;
import io.kvrouter.cluster.RouterCluster;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.BehaviorInterceptor;
import org.apache.pekko.actor.typed.TypedActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Makes a node's region go dark for the others, and come back: while its summaries are silenced its admission
 * actors' summary ticks are dropped before the actors see them; while Books are dropped the actors never see a Book
 * (its caller's ask or relayed Book times out, as across a partition).
 */
public final class DarkRegion implements RouterCluster.AdmissionDecorator {
  private final AtomicBoolean silent = new AtomicBoolean();
  private final AtomicBoolean droppingBooks = new AtomicBoolean();

  public void silenceSummaries() {
    silent.set(true);
  }

  public void resumeSummaries() {
    silent.set(false);
  }

  public void dropBooks(boolean drop) {
    droppingBooks.set(drop);
  }

  @Override
  public Behavior<ModelAdmission.Command> apply(Behavior<ModelAdmission.Command> admission) {
    return Behaviors.intercept(() -> new BehaviorInterceptor<ModelAdmission.Command, ModelAdmission.Command>(
        ModelAdmission.Command.class) {
      @Override
      public Behavior<ModelAdmission.Command> aroundReceive(TypedActorContext<ModelAdmission.Command> ctx,
          ModelAdmission.Command message, ReceiveTarget<ModelAdmission.Command> target) {
        if ((message == ModelAdmission.PublishPool.INSTANCE && silent.get())
            || ((message instanceof ModelAdmission.Book || message instanceof ModelAdmission.RelayBooks)
                && droppingBooks.get())) {
          return Behaviors.same();
        }
        return target.apply(ctx, message);
      }
    }, admission);
  }
}
