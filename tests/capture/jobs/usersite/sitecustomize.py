# A job's own sitecustomize: memlens's must still let it run.
import os
os.environ["MEMLENS_TEST_USER_SITECUSTOMIZE"] = "ran"
