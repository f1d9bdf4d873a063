module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32>, %arg1: tensor<16x48xf32>, %arg2: tensor<16x16xf32>, %arg3: tensor<16x64xf32>, %arg4: tensor<64x16xf32>) -> (tensor<8x16xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<8xf32>) -> tensor<8x1xf32>
    %cst_0 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8x1xf32>
    %3 = stablehlo.divide %1, %2 : tensor<8x1xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %4 = call @_var(%arg0, %c) : (tensor<8x16xf32>, tensor<i32>) -> tensor<8x1xf32>
    %5 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<8x1xf32>) -> tensor<8x16xf32>
    %6 = stablehlo.subtract %arg0, %5 : tensor<8x16xf32>
    %cst_1 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<8x1xf32>
    %8 = stablehlo.add %4, %7 : tensor<8x1xf32>
    %9 = stablehlo.sqrt %8 : tensor<8x1xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1] : (tensor<8x1xf32>) -> tensor<8x16xf32>
    %11 = stablehlo.divide %6, %10 : tensor<8x16xf32>
    %12 = stablehlo.dot_general %11, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x16xf32>, tensor<16x48xf32>) -> tensor<8x48xf32>
    %13 = stablehlo.slice %12 [0:8, 0:16] : (tensor<8x48xf32>) -> tensor<8x16xf32>
    %14 = stablehlo.slice %12 [0:8, 16:32] : (tensor<8x48xf32>) -> tensor<8x16xf32>
    %15 = stablehlo.slice %12 [0:8, 32:48] : (tensor<8x48xf32>) -> tensor<8x16xf32>
    %16 = stablehlo.reshape %13 : (tensor<8x16xf32>) -> tensor<8x2x8xf32>
    %17 = stablehlo.transpose %16, dims = [1, 0, 2] : (tensor<8x2x8xf32>) -> tensor<2x8x8xf32>
    %18 = stablehlo.reshape %14 : (tensor<8x16xf32>) -> tensor<8x2x8xf32>
    %19 = stablehlo.transpose %18, dims = [1, 0, 2] : (tensor<8x2x8xf32>) -> tensor<2x8x8xf32>
    %20 = stablehlo.reshape %15 : (tensor<8x16xf32>) -> tensor<8x2x8xf32>
    %21 = stablehlo.transpose %20, dims = [1, 0, 2] : (tensor<8x2x8xf32>) -> tensor<2x8x8xf32>
    %22 = stablehlo.dot_general %17, %19, batching_dims = [0] x [0], contracting_dims = [2] x [2], precision = [DEFAULT, DEFAULT] : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %cst_2 = stablehlo.constant dense<2.82842708> : tensor<f32>
    %23 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<2x8x8xf32>
    %24 = stablehlo.divide %22, %23 : tensor<2x8x8xf32>
    %c_3 = stablehlo.constant dense<true> : tensor<i1>
    %25 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i1>) -> tensor<8x8xi1>
    %26 = call @tril(%25) : (tensor<8x8xi1>) -> tensor<8x8xi1>
    %cst_4 = stablehlo.constant dense<-1.000000e+09> : tensor<f32>
    %27 = call @_where_0(%26, %24, %cst_4) : (tensor<8x8xi1>, tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
    %cst_5 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %28 = stablehlo.reduce(%27 init: %cst_5) applies stablehlo.maximum across dimensions = [2] : (tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8xf32>
    %cst_6 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %29 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
    %30 = stablehlo.maximum %29, %28 : tensor<2x8xf32>
    %31 = stablehlo.broadcast_in_dim %30, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
    %32 = stablehlo.broadcast_in_dim %31, dims = [0, 1, 2] : (tensor<2x8x1xf32>) -> tensor<2x8x8xf32>
    %33 = stablehlo.subtract %27, %32 : tensor<2x8x8xf32>
    %34 = stablehlo.exponential %33 : tensor<2x8x8xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %35 = stablehlo.reduce(%34 init: %cst_7) applies stablehlo.add across dimensions = [2] : (tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8xf32>
    %36 = stablehlo.broadcast_in_dim %35, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
    %37 = stablehlo.broadcast_in_dim %36, dims = [0, 1, 2] : (tensor<2x8x1xf32>) -> tensor<2x8x8xf32>
    %38 = stablehlo.divide %34, %37 : tensor<2x8x8xf32>
    %39 = stablehlo.dot_general %38, %21, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %40 = stablehlo.transpose %39, dims = [1, 0, 2] : (tensor<2x8x8xf32>) -> tensor<8x2x8xf32>
    %41 = stablehlo.reshape %40 : (tensor<8x2x8xf32>) -> tensor<8x16xf32>
    %42 = stablehlo.dot_general %41, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
    %43 = stablehlo.add %arg0, %42 : tensor<8x16xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %44 = stablehlo.reduce(%43 init: %cst_8) applies stablehlo.add across dimensions = [1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8xf32>
    %45 = stablehlo.broadcast_in_dim %44, dims = [0] : (tensor<8xf32>) -> tensor<8x1xf32>
    %cst_9 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %46 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<8x1xf32>
    %47 = stablehlo.divide %45, %46 : tensor<8x1xf32>
    %c_10 = stablehlo.constant dense<0> : tensor<i32>
    %48 = call @_var(%43, %c_10) : (tensor<8x16xf32>, tensor<i32>) -> tensor<8x1xf32>
    %49 = stablehlo.broadcast_in_dim %47, dims = [0, 1] : (tensor<8x1xf32>) -> tensor<8x16xf32>
    %50 = stablehlo.subtract %43, %49 : tensor<8x16xf32>
    %cst_11 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %51 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<8x1xf32>
    %52 = stablehlo.add %48, %51 : tensor<8x1xf32>
    %53 = stablehlo.sqrt %52 : tensor<8x1xf32>
    %54 = stablehlo.broadcast_in_dim %53, dims = [0, 1] : (tensor<8x1xf32>) -> tensor<8x16xf32>
    %55 = stablehlo.divide %50, %54 : tensor<8x16xf32>
    %56 = stablehlo.dot_general %55, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
    %57 = stablehlo.multiply %56, %56 : tensor<8x64xf32>
    %58 = stablehlo.multiply %57, %56 : tensor<8x64xf32>
    %cst_12 = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %59 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<8x64xf32>
    %60 = stablehlo.multiply %59, %58 : tensor<8x64xf32>
    %61 = stablehlo.add %56, %60 : tensor<8x64xf32>
    %cst_13 = stablehlo.constant dense<0.797884583> : tensor<f32>
    %62 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<8x64xf32>
    %63 = stablehlo.multiply %62, %61 : tensor<8x64xf32>
    %64 = stablehlo.tanh %63 : tensor<8x64xf32>
    %cst_14 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %65 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<8x64xf32>
    %66 = stablehlo.add %65, %64 : tensor<8x64xf32>
    %cst_15 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %67 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<8x64xf32>
    %68 = stablehlo.multiply %67, %66 : tensor<8x64xf32>
    %69 = stablehlo.multiply %56, %68 : tensor<8x64xf32>
    %70 = stablehlo.dot_general %69, %arg4, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
    %71 = stablehlo.add %43, %70 : tensor<8x16xf32>
    return %71 : tensor<8x16xf32>
  }
  func.func private @_var(%arg0: tensor<8x16xf32>, %arg1: tensor<i32>) -> tensor<8x1xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<8xf32>) -> tensor<8x1xf32>
    %cst_0 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8x1xf32>
    %3 = stablehlo.divide %1, %2 : tensor<8x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<8x1xf32>) -> tensor<8x16xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<8x16xf32>
    %6 = chlo.square %5 : tensor<8x16xf32> -> tensor<8x16xf32>
    %7 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %cst_1 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %8 = stablehlo.subtract %cst_1, %7 : tensor<f32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.reduce(%6 init: %cst_2) applies stablehlo.add across dimensions = [1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0] : (tensor<8xf32>) -> tensor<8x1xf32>
    %11 = stablehlo.broadcast_in_dim %8, dims = [] : (tensor<f32>) -> tensor<8x1xf32>
    %12 = stablehlo.divide %10, %11 : tensor<8x1xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %13 = stablehlo.compare GT, %8, %cst_3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %cst_4 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %14 = call @_where(%13, %12, %cst_4) : (tensor<i1>, tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32>
    return %14 : tensor<8x1xf32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<8x1xf32>, %arg2: tensor<f32>) -> tensor<8x1xf32> {
    %0 = stablehlo.convert %arg2 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<8x1xf32>
    %2 = stablehlo.select %arg0, %arg1, %1 : tensor<i1>, tensor<8x1xf32>
    return %2 : tensor<8x1xf32>
  }
  func.func private @tril(%arg0: tensor<8x8xi1>) -> tensor<8x8xi1> {
    %0 = stablehlo.iota dim = 0 : tensor<8x8xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<8x8xi32>
    %2 = stablehlo.add %0, %1 : tensor<8x8xi32>
    %3 = stablehlo.iota dim = 1 : tensor<8x8xi32>
    %4 = stablehlo.compare GE, %2, %3, SIGNED : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi1>
    %c_0 = stablehlo.constant dense<false> : tensor<i1>
    %5 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i1>) -> tensor<8x8xi1>
    %6 = stablehlo.select %4, %arg0, %5 : tensor<8x8xi1>, tensor<8x8xi1>
    return %6 : tensor<8x8xi1>
  }
  func.func private @_where_0(%arg0: tensor<8x8xi1>, %arg1: tensor<2x8x8xf32>, %arg2: tensor<f32>) -> tensor<2x8x8xf32> {
    %0 = stablehlo.convert %arg2 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [1, 2] : (tensor<8x8xi1>) -> tensor<2x8x8xi1>
    %2 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<2x8x8xf32>
    %3 = stablehlo.select %1, %arg1, %2 : tensor<2x8x8xi1>, tensor<2x8x8xf32>
    return %3 : tensor<2x8x8xf32>
  }
}
