#include "support/Thread.h"

#include <pthread.h>

namespace coconet {

void runOnLargeStack(size_t stackBytes, const std::function<void()>& fn) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, stackBytes);
  pthread_t th;
  std::function<void()> task = fn;
  auto trampoline = [](void* p) -> void* {
    (*static_cast<std::function<void()>*>(p))();
    return nullptr;
  };
  if (pthread_create(&th, &attr, trampoline, &task) == 0)
    pthread_join(th, nullptr);
  else
    fn();  // no thread could be made: run here
  pthread_attr_destroy(&attr);
}

}  // namespace coconet
