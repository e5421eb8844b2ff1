#include <mseloss/mseloss.hpp>

#include <cstdio>

int main() {
  float x[3] = {1, 2, 3}, y[3] = {1, 0, 0}, loss = -1;
  mseloss::forward(mseloss::TensorView::contiguous(x, mseloss::DType::f32, {3}),
                   mseloss::TensorView::contiguous(y, mseloss::DType::f32, {3}),
                   mseloss::TensorView::scalar(&loss, mseloss::DType::f32));
  std::printf("%g\n", loss);
  return loss == 13.0f / 3.0f ? 0 : 1;
}
