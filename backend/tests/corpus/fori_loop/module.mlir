module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x4xf32>) -> (tensor<3x4xf32> {jax.result_info = "result[0]"}, tensor<i32> {jax.result_info = "result[1]"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %0:4 = stablehlo.while(%iterArg = %c_1, %iterArg_2 = %c, %iterArg_3 = %arg0, %iterArg_4 = %c_0) : tensor<i32>, tensor<i32>, tensor<3x4xf32>, tensor<i32>
    cond {
      %c_5 = stablehlo.constant dense<6> : tensor<i32>
      %1 = stablehlo.compare LT, %iterArg, %c_5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1:3 = func.call @closed_call(%iterArg_2, %iterArg_3, %iterArg_4) : (tensor<i32>, tensor<3x4xf32>, tensor<i32>) -> (tensor<i32>, tensor<3x4xf32>, tensor<i32>)
      %c_5 = stablehlo.constant dense<1> : tensor<i32>
      %2 = stablehlo.add %iterArg, %c_5 : tensor<i32>
      stablehlo.return %2, %1#0, %1#1, %1#2 : tensor<i32>, tensor<i32>, tensor<3x4xf32>, tensor<i32>
    }
    return %0#2, %0#3 : tensor<3x4xf32>, tensor<i32>
  }
  func.func private @closed_call(%arg0: tensor<i32>, %arg1: tensor<3x4xf32>, %arg2: tensor<i32>) -> (tensor<i32>, tensor<3x4xf32>, tensor<i32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg0, %c : tensor<i32>
    %cst = stablehlo.constant dense<0.899999976> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %2 = stablehlo.multiply %1, %arg1 : tensor<3x4xf32>
    %3 = stablehlo.sine %arg1 : tensor<3x4xf32>
    %4 = stablehlo.add %2, %3 : tensor<3x4xf32>
    %5 = stablehlo.convert %arg0 : tensor<i32>
    %6 = stablehlo.add %arg2, %5 : tensor<i32>
    return %0, %4, %6 : tensor<i32>, tensor<3x4xf32>, tensor<i32>
  }
}
